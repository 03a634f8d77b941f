/**
 * The one composition of a task: its services (the redaction point's secrets, the gateway, the Meta-agent,
 * the Docker side, the journal, the sandbox and the worker) built from a {@link TaskSpec} and reported
 * through {@link TaskHooks}. `run`, `resume` and every subtask of a project come through here.
 */
import { readCachedRemote } from '../remote/repository-cache.js';
import path from 'node:path';
import type { DetectedCommand } from '../core/detected-command.js';
import type { SetupCommandReport, StampedEvent } from '../core/events.js';
import type { PreparedTask } from '../core/ports.js';
import type { Ledger } from '../core/ledger.js';
import type { TaskRecord } from '../core/task-record.js';
import { taskLedger, TaskRunner, type TaskRunnerOptions } from '../core/task-runner.js';
import type { TaskGateway } from '../gateway/task-gateway.js';
import { deferredPorts, type DockerSidePorts } from '../lifecycle/deferred-ports.js';
import { EngineWatchRuntime } from '../lifecycle/engine-watch.js';
import { hurryKillArgv } from '../lifecycle/hurry-kill.js';
import { keptSandboxLabels } from '../lifecycle/orphan-sandboxes.js';
import { taskSandboxPorts } from '../lifecycle/task-sandbox-ports.js';
import { createMetaAgent } from '../meta/meta-agent.js';
import { MetaAgentPortAdapter } from '../meta/meta-agent-port.js';
import { EventJournal } from '../notes/event-journal.js';
import { taskMemoryBank } from '../memory/memory-store.js';
import { readNoteMemory } from '../notes/memory.js';
import { writeTaskNote } from '../notes/note-writer.js';
import { loadPatternLibrary } from '../patterns/pattern-library.js';
import { workerPromptTemplate } from '../patterns/worker-prompt.js';
import type { GitTaskWorkspace } from '../workspace/git-task-workspace.js';
import type { DockerSandboxProvider } from '../sandbox/docker-sandbox-provider.js';
import { taskLayout } from '../workspace/layout.js';
import { recordEvidence } from '../verify/record-evidence.js';
import { startDockerSide } from './docker-side.js';
import type { TaskHooks, TaskResult, TaskSpec } from './task-spec.js';
import type { TaskHost } from './task-host.js';
import { checkedMetaModel, openGateway, type GatewayOptions } from './task-services.js';
import { TaskTracker } from './task-tracker.js';
import { metaWorkerOffers, taskWorker, taskWorkerOptions } from './task-worker.js';
import { configuredWorkers } from '../config/workers.js';

/** The longest the Docker side waits for the plan request to leave before it starts anyway. */
const PLAN_HEAD_START_MS = 300;

/** A composed task, ready to run once; `close` ends what it started (after running, or instead of it). */
export interface ComposedTask {
  run(): Promise<TaskResult>;
  /** As `run`, or `handed_off` (with the prepared task) when the plan given from outside split the work. */
  runOrHandOff(): Promise<TaskResult | { handedOff: PreparedTask | null }>;
  close(): Promise<void>;
}

/** Builds a task's services; the lock is the caller's. */
export async function composeTask(host: TaskHost, spec: TaskSpec, hooks: TaskHooks): Promise<ComposedTask> {
  const redact = host.protect(spec.config, spec.env);
  const layout = taskLayout(spec.repoRoot, spec.taskId);
  // Loading dockerode holds the event loop for a while (it is most of the Docker side's start): the Docker
  // side waits until the plan request has left, or at most PLAN_HEAD_START_MS, or not at all when the task
  // has its plan already (a resume after planning, a plan given by parallel work) or its planning failed.
  let planLeft = () => {};
  const planSent = new Promise<void>((resolve) => (planLeft = resolve));
  if (spec.start.kind !== 'new') planLeft();
  else setTimeout(planLeft, PLAN_HEAD_START_MS).unref();
  const journal = new EventJournal(layout.runDir, host.redaction.redactJsonText);
  const record = (event: StampedEvent) => {
    hooks.onEvent?.(event);
    // Last, so the person still sees the event when the journal cannot be written (it then throws).
    journal.append(event);
  };
  const options = runnerOptions(spec, hooks, layout.runDir);
  const ledger = taskLedger(options, host.clock, spec.parent);
  const gateway = await openGateway(
    host,
    { config: spec.config, env: spec.env, repoRoot: spec.repoRoot, runDir: layout.runDir },
    {
      onSent: (kind) => {
        if (kind === 'meta') planLeft();
      },
      onRefusal: (refusal) => {
        try {
          record({ type: 'gateway_refused', refusal, at: host.stamp() });
        } catch {
          // The runner's own next event reports the journal's failure.
        }
      },
      ...gatewayModels(spec),
      ledger,
    },
  );
  try {
    return await composeOnGateway(host, spec, hooks, { gateway, options, ledger, planSent, record, redact });
  } catch (error) {
    await gateway.close();
    throw error;
  }
}

/** The gateway's cassette: where a recording goes, or what a replay answers from. */
function gatewayModels(spec: TaskSpec): GatewayOptions {
  const models = spec.models ?? {};
  const attempt = spec.start.kind === 'resume' ? spec.start.attempt : 1;
  return {
    ...(models.record ? { record: models.record, appendRecord: spec.start.kind === 'resume' } : {}),
    ...(models.replay ? { replay: models.replay, attempt } : {}),
  };
}

interface Started {
  gateway: TaskGateway;
  options: Omit<TaskRunnerOptions, 'patterns'>;
  ledger: Ledger;
  planSent: Promise<void>;
  record: (event: StampedEvent) => void;
  redact: (text: string) => string;
}

async function composeOnGateway(
  host: TaskHost,
  spec: TaskSpec,
  hooks: TaskHooks,
  started: Started,
): Promise<ComposedTask> {
  const { gateway, record } = started;
  const { config, repoRoot, taskId } = spec;
  const layout = taskLayout(repoRoot, taskId);
  const metaAgent = createMetaAgent({
    model: checkedMetaModel(host, config, spec.env, gateway, { replay: Boolean(spec.models?.replay) }),
    config,
    logDir: path.join(layout.runDir, 'meta'),
    redact: started.redact,
    ...metaWorkerOffers(config),
  });
  const patterns = await loadPatternLibrary(config.patterns.dirs.map((dir) => path.resolve(repoRoot, dir)));
  // A `--repo` task's repository is named by its credential-free URL, not by the cache's path.
  const repository = (await readCachedRemote(repoRoot)) ?? repoRoot;
  const tracker = new TaskTracker();
  if (spec.start.kind === 'resume')
    tracker.workerSummary = spec.start.previous.runs.at(-1)?.finalMessage ?? undefined;
  // Set-up runs inside sandboxes.setUp(): its commands go to the progress, the journal and the note.
  const setupReports: SetupCommandReport[] = [];
  const onSetupReport = (report: SetupCommandReport): void => {
    if (report.phase === 'finished') setupReports.push(report);
    record({ type: 'setup_command', ...report, at: new Date().toISOString() });
  };
  // The set-up detected from the repository (sandbox.setup not set), for the note.
  const setupDetected: DetectedCommand[] = [];
  const onSetupDetected = (detected: readonly DetectedCommand[]): void => {
    setupDetected.push(...detected);
  };
  const side = startTaskDockerSide(host, spec, hooks, { ...started, onSetupReport, onSetupDetected });
  const ports = tracker.track(
    deferredPorts(side.ports, host.dependencies.worker?.type ?? config.worker.type),
  );
  const [defaultWorker, ...otherWorkers] = configuredWorkers(config);
  const workerModel = defaultWorker?.model ?? config.meta.model;
  const runner = new TaskRunner(
    { ...started.options, patterns },
    {
      meta: new MetaAgentPortAdapter(metaAgent),
      ...ports,
      human: host.dependencies.human ?? hooks.human ?? { ask: async () => null },
      notes: { readMemory: (exclude) => readNoteMemory(layout.stateDir, exclude) },
      memoryBank: { read: () => taskMemoryBank(repoRoot, spec.base ?? 'HEAD', config.memory.dir) },
      workerPrompt: workerPromptTemplate,
      clock: host.clock,
      ledger: started.ledger,
      writeNote: async (taskRecord) => {
        await leaveEvidence(taskRecord, host, hooks, repoRoot, side.image());
        return writeTaskNote(taskRecord, {
          agentRunnerDir: layout.stateDir,
          repository,
          prdPath: spec.prdPath,
          workerModel,
          otherWorkers: otherWorkers.map((worker) => `${worker.type} (${worker.model})`).join(', '),
          redact: started.redact,
          setup: setupReports,
          setupDetected,
          ...(config.notes.template ? { templatePath: path.resolve(repoRoot, config.notes.template) } : {}),
        });
      },
      onEvent: record,
    },
  );
  return composedTask(() => runToEnd(runner, tracker, side, hooks), side, spec, gateway);
}

/** The composed task: its run, and a close that leaves nothing of the Docker side or the gateway behind. */
function composedTask(
  runOrHandOff: ComposedTask['runOrHandOff'],
  side: TaskDockerSide,
  spec: TaskSpec,
  gateway: TaskGateway,
): ComposedTask {
  return {
    runOrHandOff,
    async run() {
      const result = await runOrHandOff();
      if ('handedOff' in result) throw new Error('the task was handed off: its caller uses runOrHandOff');
      return result;
    },
    async close() {
      try {
        // Nothing of the Docker side (a sweep, an image inspect, the worktree's checkout) outlives the task.
        await side.ports.catch(() => undefined);
        await side.workspace()?.settled();
        // The capped file systems end with the task whatever its path (a kept sandbox has none); their files
        // stay in the directories. The provider's stop released them already when a sandbox was made; this
        // one is for a task that ended before (a refusal, a diverged replay) with the workspace's cap mounted.
        if (!spec.keepSandbox) await side.sandboxes()?.releaseDisk();
      } finally {
        await gateway.close();
      }
    },
  };
}

/** The evidence travels with the branch (`verify` re-runs it); a failure to write it costs the note nothing. */
async function leaveEvidence(
  taskRecord: TaskRecord,
  host: TaskHost,
  hooks: TaskHooks,
  repoRoot: string,
  image: string | null,
): Promise<void> {
  await recordEvidence(taskRecord, { repoRoot, image, redactJson: host.redaction.redactJsonText }).catch(
    (error: unknown) =>
      hooks.onNotice?.(`the evidence note could not be written: ${(error as Error).message}`),
  );
}

/** Runs the composed task to its end (or its hand-off), a second Ctrl-C reaching a running worker at once. */
async function runToEnd(
  runner: TaskRunner,
  tracker: TaskTracker,
  side: TaskDockerSide,
  hooks: TaskHooks,
): Promise<TaskResult | { handedOff: PreparedTask | null }> {
  const onHurry = () => {
    // Only while the worker runs: later steps (saving its uncommitted work) must not be cut short.
    const runtime = side.runtime();
    if (tracker.sandboxId && tracker.workerRunning && runtime)
      void runtime.exec(tracker.sandboxId, hurryKillArgv(), { timeoutMs: 5_000, graceMs: 0 }).catch(() => {});
  };
  hooks.hurry?.addEventListener('abort', onHurry, { once: true });
  try {
    const result = await runner.runOrHandOff(hooks.signal);
    if (result.kind === 'handed_off') {
      // Nothing ran in it: the sandbox repository goes; the branch and the worktree are the caller's now.
      await side.workspace()?.removeSandbox();
      return { handedOff: result.task };
    }
    return {
      summary: result.summary,
      ...(tracker.lastDod ? { dod: tracker.lastDod } : {}),
      ...(tracker.workerSummary ? { workerSummary: tracker.workerSummary } : {}),
    };
  } finally {
    hooks.hurry?.removeEventListener('abort', onHurry);
  }
}

/** The runner's options: what the spec says, in the loop's terms. */
function runnerOptions(
  spec: TaskSpec,
  hooks: TaskHooks,
  runDir: string,
): Omit<TaskRunnerOptions, 'patterns'> {
  const { config } = spec;
  const models = spec.models ?? {};
  const resume = spec.start.kind === 'resume' ? spec.start : null;
  return {
    taskId: spec.taskId,
    prd: spec.prd,
    startOptions: {
      prdPath: spec.prdPath,
      prd: spec.prd,
      ...(spec.base !== undefined ? { base: spec.base } : {}),
      dodSkipped: spec.dodSkipped,
      ...(resume ? { resumed: true } : {}),
      ...(spec.keepSandbox ? { keepSandbox: true } : {}),
      ...(models.record ? { record: models.record } : {}),
      ...(models.replay ? { replay: models.replay } : {}),
      ...(config.deliver.forge !== 'auto' ? { forge: config.deliver.forge } : {}),
    },
    ...(resume ? { previous: resume.previous } : {}),
    ...(resume?.followup ? { followup: resume.followup } : {}),
    ...(spec.start.kind === 'planned' ? { givenPlan: spec.start.plan } : {}),
    limits: config.limits,
    worker: taskWorkerOptions(config),
    prices: config.prices,
    dodSkipped: spec.dodSkipped || config.dod.skip,
    baseline: { mode: config.dod.baseline, redBase: config.dod.redBase },
    headless: !hooks.human,
    runDir,
  };
}

/** The task's Docker side: its ports once ready, and what is made so far. */
interface TaskDockerSide {
  ports: Promise<DockerSidePorts>;
  runtime: () => EngineWatchRuntime | null;
  workspace: () => GitTaskWorkspace | null;
  sandboxes: () => DockerSandboxProvider | null;
  /** The sandbox image, once resolved. */
  image: () => string | null;
}

/**
 * The Docker side runs while the Meta-agent plans (planning needs only the PRD, the config and the memory);
 * the loop's ports wait for it, and its failure fails the workspace's preparation, which stops the planning.
 */
function startTaskDockerSide(
  host: TaskHost,
  spec: TaskSpec,
  hooks: TaskHooks,
  started: Started & {
    onSetupReport: (report: SetupCommandReport) => void;
    onSetupDetected: (detected: readonly DetectedCommand[]) => void;
  },
): TaskDockerSide {
  let runtime: EngineWatchRuntime | null = null;
  let workspace: GitTaskWorkspace | null = null;
  let sandboxes: DockerSandboxProvider | null = null;
  let taskImage: string | null = null;
  const ports = (async (): Promise<DockerSidePorts> => {
    await started.planSent;
    const engine = await host.docker();
    runtime = new EngineWatchRuntime(engine.runtime, { taskId: spec.taskId, dockerHost: engine.hostName });
    const { image, setup, setupDetected, containerRuntime } = await startDockerSide(
      engine.docker,
      runtime,
      spec,
      hooks.onNotice,
    );
    started.onSetupDetected(setupDetected);
    taskImage = image;
    const sandbox = taskSandboxPorts({
      runtime,
      config: spec.config,
      image,
      repoRoot: spec.repoRoot,
      taskId: spec.taskId,
      ...(spec.base !== undefined ? { base: spec.base } : {}),
      dodSkipped: spec.dodSkipped,
      gateway: started.gateway,
      setup: { signal: hooks.signal, onReport: started.onSetupReport, commands: setup },
      keep: spec.keepSandbox,
      ...(hooks.onKept ? { onKept: hooks.onKept } : {}),
      labels: keptSandboxLabels(spec.keepSandbox),
      containerRuntime,
    });
    workspace = sandbox.workspace;
    sandboxes = sandbox.sandboxes;
    const worker = taskWorker(host, spec, runtime, started.gateway);
    return { workspace: sandbox.workspace, sandboxes: sandbox.sandboxes, worker };
  })();
  // Handled here; the loop's first call (the workspace's preparation) reports the failure.
  ports.catch(() => undefined);
  return {
    ports,
    runtime: () => runtime,
    workspace: () => workspace,
    sandboxes: () => sandboxes,
    image: () => taskImage,
  };
}
