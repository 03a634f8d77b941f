/**
 * `agent-runner control migrate` and `agent-runner control status`: the control plane's database (see
 * src/control/ and docs/architecture.md, "Control plane"). The URL comes from `--control`, `control.url` of
 * agent-runner.yaml, or AGENT_RUNNER_CONTROL_URL; its password never appears in any output.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { UserError } from '../errors.js';
import type { ControlUrl } from '../control/control-url.js';
import type { CommandContext } from './program.js';

interface ControlOptions {
  control?: string;
  json?: boolean;
}

/** The control URL of this command: the flag, else the config (file, then environment); absent: a usage error. */
export async function resolveControlUrl(
  flag: string | undefined,
  context: CommandContext,
): Promise<ControlUrl | null> {
  const { controlUrl } = await import('../control/control-url.js');
  if (flag !== undefined) return controlUrl(flag, context.redaction);
  const config = await loadConfig({ repoRoot: context.cwd, env: context.env, flags: {} });
  return config.control.url === undefined
    ? null
    : controlUrl(config.control.url, context.redaction, 'control.url');
}

async function requiredControlUrl(flag: string | undefined, context: CommandContext): Promise<ControlUrl> {
  const url = await resolveControlUrl(flag, context);
  if (url === null)
    throw new UserError(
      'usage',
      'No control database: give --control postgres://USER:PASSWORD@HOST:PORT/DB, control.url in ' +
        'agent-runner.yaml, or AGENT_RUNNER_CONTROL_URL.',
    );
  return url;
}

async function migrateCommand(options: ControlOptions, context: CommandContext): Promise<void> {
  const url = await requiredControlUrl(options.control, context);
  const [{ openControlDatabase }, { migrateControl }] = await Promise.all([
    import('../control/control-database.js'),
    import('../control/migrate-control.js'),
  ]);
  const nodePassword = context.env.AGENT_RUNNER_NODE_PASSWORD;
  if (nodePassword) context.redaction.add([nodePassword]);
  const database = await openControlDatabase(url, { max: 2 });
  try {
    const result = await migrateControl(database, nodePassword ? { nodePassword } : {});
    if (options.json) {
      context.output.out(JSON.stringify({ database: url.shown, ...result }));
      return;
    }
    context.output.out(
      `${url.shown}: ${result.applied.length === 0 ? 'tables up to date' : `applied ${result.applied.join(', ')}`}; ` +
        `queue schema ${result.queueSchemaVersion}; role ${result.nodeRole.name} ` +
        (result.nodeRole.canLogin
          ? 'can log in'
          : 'cannot log in yet (set AGENT_RUNNER_NODE_PASSWORD and run control migrate again)'),
    );
  } finally {
    await database.close();
  }
}

async function statusCommand(options: ControlOptions, context: CommandContext): Promise<void> {
  const url = await requiredControlUrl(options.control, context);
  const [{ openControlDatabase }, { fleetStatus, formatFleetStatus }] = await Promise.all([
    import('../control/control-database.js'),
    import('../control/fleet-status.js'),
  ]);
  const database = await openControlDatabase(url, { max: 1 });
  try {
    // Stale as the nodes judge it: past the fleet's lease (control.leaseSeconds, else its default).
    const config = await loadConfig({ repoRoot: context.cwd, env: context.env, flags: {} });
    const status = await fleetStatus(database, config.control.leaseSeconds);
    if (options.json) context.output.out(JSON.stringify(status));
    else for (const line of formatFleetStatus(status)) context.output.out(line);
  } finally {
    await database.close();
  }
}

/**
 * `run --detach --repo URL --prd FILE` with a control URL: the task is queued on the fleet (its row and its
 * job), its id printed. False when there is no control URL (the caller says why --repo cannot detach).
 */
export async function enqueueFromCli(
  options: { control?: string; repo?: string; prd: string; base?: string; taskId?: string },
  context: CommandContext,
): Promise<boolean> {
  const url = await resolveControlUrl(options.control, context);
  if (url === null || options.repo === undefined) return false;
  const [{ openControlDatabase }, { enqueueTask, startQueueClient }, { loadPrd }, { newTaskId }] =
    await Promise.all([
      import('../control/control-database.js'),
      import('../control/task-queue.js'),
      import('../prd/load-prd.js'),
      import('../app.js'),
    ]);
  const prd = await loadPrd(path.resolve(context.cwd, options.prd));
  const database = await openControlDatabase(url, { max: 2 });
  try {
    const boss = await startQueueClient(database);
    try {
      const taskId = options.taskId ?? newTaskId(prd);
      await enqueueTask(database, boss, {
        taskId,
        repoUrl: options.repo,
        prd,
        ...(options.base !== undefined ? { base: options.base } : {}),
      });
      context.output.out(taskId);
      context.output.err(`agent-runner: ${taskId} queued on the fleet at ${url.shown}`);
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
  } finally {
    await database.close();
  }
  return true;
}

export function registerControlCommand(program: Command, context: CommandContext): void {
  const control = program
    .command('control')
    .description('The control plane in PostgreSQL: migrate its database, show the fleet.');
  control
    .command('migrate')
    .description(
      'Create or update the control tables, the queue and the node role (AGENT_RUNNER_NODE_PASSWORD: its password).',
    )
    .option(
      '--control <url>',
      'the control database (postgres://…); else control.url or AGENT_RUNNER_CONTROL_URL',
    )
    .option('--json', 'print the result as JSON')
    .action(async (options: ControlOptions) => migrateCommand(options, context));
  control
    .command('status')
    .description('Nodes with their load and heartbeat (stale ones marked), queue depth, oldest queued task.')
    .option(
      '--control <url>',
      'the control database (postgres://…); else control.url or AGENT_RUNNER_CONTROL_URL',
    )
    .option('--json', 'print the status as JSON')
    .action(async (options: ControlOptions) => statusCommand(options, context));
}
