/**
 * The delivery of a fleet's task that asked for one (a webhook's task from an issue: `pr`, `closes`), done by the
 * node that ends it, after the node's own last push, through the one delivery step (`deliverTask`) `run --pr`
 * and a one-repository `serve` use: the branch pushed with the node's lease (where its own pushes left it, so the
 * two pushes never refuse each other), the request opened or updated, one reply on the issue. The rest of
 * `deliver.*` is the repository's configuration (its `deliver.when` stays the owner's); the remote is the one the
 * task ran from, and the forge token is the node's own, from its environment. A failure is in the delivery record
 * and the node's log; the task's end stays what it was.
 */
import { loadConfig } from '../config/load.js';
import type { FleetDelivery } from '../control/task-queue-options.js';
import type { Redaction } from '../notes/redact.js';

export interface FleetDeliveryInput {
  /** The task's cached clone (its remote `origin` is the task's repository). */
  root: string;
  taskId: string;
  deliver: FleetDelivery;
  /** The branch the task started from: the request's target unless `deliver.base` names one. */
  baseBranch: string;
  /** The commit the node's own pushes left on the remote branch (null: none). */
  pushed: string | null;
  /** The node's credential for the push (from the task's URL), when it has one. */
  credentialConfig: Record<string, string>;
  env: NodeJS.ProcessEnv;
  redaction: Redaction;
  log: (line: string) => void;
}

/** Delivers the ended task; never throws (a failure is recorded and logged). */
export async function deliverFleetTask(input: FleetDeliveryInput): Promise<void> {
  const say = (line: string) => input.log(`task ${input.taskId}: ${input.redaction.redact(line)}`);
  try {
    const { deliverTask } = await import('../deliver/deliver-task.js');
    const config = await loadConfig({ repoRoot: input.root, env: input.env, flags: {} });
    const outcome = await deliverTask({
      repoRoot: input.root,
      taskId: input.taskId,
      settings: {
        ...config.deliver,
        ...input.deliver,
        remote: 'origin',
        base: config.deliver.base ?? input.baseBranch,
      },
      env: input.env,
      redaction: input.redaction,
      pushedBy: {
        leaseFor: () => input.pushed,
        // The URL's own credential, as the node's pushes use it; else the forge's token, as delivery finds it.
        ...(Object.keys(input.credentialConfig).length > 0
          ? { credentialConfig: input.credentialConfig }
          : {}),
      },
    });
    if (outcome.skipped) say(`not delivered: ${outcome.skipped}`);
    else if (outcome.error) say(`delivery failed: ${outcome.error.message}`);
    else say(`delivered: ${outcome.url ?? outcome.branch}`);
  } catch (error) {
    say(`delivery failed: ${(error as Error).message}`);
  }
}
