/**
 * The composition root: the one place that wires the real adapters (Docker, git, codex, the OpenAI SDK)
 * to the core's ports. Commands call `runTask`; tests can pass their own pieces through `AppDependencies`.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type Docker from 'dockerode';
import type { Config } from './config/schema.js';
import type { SetupCommandReport, StampedEvent } from './core/events.js';
import type { Clock, HumanPort, SandboxRuntime, SharedMetaCalls, WorkerAdapter } from './core/ports.js';
import { TaskRunner, type TaskRunnerOptions } from './core/task-runner.js';
import type { Plan, TaskSummary, Usage } from './core/types.js';
import { EnvironmentError } from './errors.js';
import { EngineWatchRuntime } from './lifecycle/engine-watch.js';
import { hurryKillArgv } from './lifecycle/hurry-kill.js';
import { findDeadOwnerSandboxes, keptSandboxLabels, removeSandboxes } from './lifecycle/orphan-sandboxes.js';
import { acquireTaskLock } from './lifecycle/task-lock.js';
import { deferredPorts, type DockerSidePorts } from './lifecycle/deferred-ports.js';
import { readModelScript, startScriptedModelServer } from './demo/scripted-model-server.js';
import { createMetaAgent } from './meta/meta-agent.js';
import { MetaAgentPortAdapter, titleOf } from './meta/meta-agent-port.js';
import type { MetaModel } from './meta/meta-model.js';
import { createOpenAiChatModel } from './meta/openai-chat-model.js';
import { EventJournal } from './notes/event-journal.js';
import { readNoteMemory } from './notes/memory.js';
import { writeTaskNote } from './notes/note-writer.js';
import { Redaction, configSecrets, type Redactor } from './notes/redact.js';
import { loadPatternLibrary } from './patterns/pattern-library.js';
import { CODEX_HOME_IN_SANDBOX } from './sandbox/docker-sandbox-provider.js';
import { taskSandboxPorts } from './lifecycle/task-sandbox-ports.js';
import { GatewayCheckedMetaModel, GatewayMeteredWorker } from './gateway/gateway-guards.js';
import type { TaskBudget } from './gateway/task-budget.js';
import { startTaskGateway } from './gateway/task-gateway.js';
import { readWorkerImageInputs, workerImageTag } from './sandbox/worker-image.js';
import { VERSION } from './version.js';
import { CodexWorkerAdapter } from './worker/codex-adapter.js';
import { StateRedactingWorker } from './worker/state-redacting-worker.js';
import type { GitTaskWorkspace } from './workspace/git-task-workspace.js';
import { taskLayout } from './workspace/layout.js';

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    }),
};

export interface RunTaskRequest {
  repoRoot: string;
  prd: string;
  prdPath: string;
  taskId?: string;
  base?: string;
  config: Config;
  env: NodeJS.ProcessEnv;
  headless: boolean;
  keepSandbox: boolean;
  dodSkipped: boolean;
  onEvent?: (event: StampedEvent) => void;
  onKept?: (sandboxId: string) => void;
  signal?: AbortSignal;
  /** Answers ask_human on a terminal; absent when headless. */
  human?: HumanPort;
  /** Aborted on a second Ctrl-C: the worker's processes are killed at once instead of after the grace. */
  hurry?: AbortSignal;
  /** One-line notices for the person (orphaned containers removed, a stale lock taken over). */
  onNotice?: (text: string) => void;
  /** `resume`: continue from an earlier attempt rebuilt from the journal. */
  resume?: {
    previous: NonNullable<TaskRunnerOptions['previous']>;
    /** This attempt's number (earlier attempts + 1): a replay answers from its own recorded exchanges. */
    attempt?: number;
  };
  /** `--model-script FILE`: a scripted model served by agent-runner itself (demo, trying it without a key). */
  modelScript?: string;
  /** `--record FILE`: store every model exchange in a cassette. */
  record?: string;
  /** `--replay FILE`: answer every model call from a cassette, with no upstream. */
  replay?: string;
  /**
   * The process's redaction point (the CLI's, so stdout and stderr hide what the files hide); the task adds
   * its keys, `redact.patterns` and the gateway's tokens to it. Default: a new one.
   */
  redaction?: Redaction;
  /**
   * A plan made before the task started (parallel work: the planner's answer for one task, or a subtask's
   * criteria): the task does not call `plan_task` again; the plan is journalled as if it had.
   */
  plan?: { plan: Plan; usage: Usage; metaCalls: number };
  /** The planning call made before the task started failed: the task ends FAILED with it (note written). */
  planError?: unknown;
  /** A project's subtask: the project's budget, which the task's gateway also counts against and enforces. */
  projectBudget?: Pick<TaskBudget, 'add' | 'exhausted'>;
  /** The project's Meta-agent call count (a subtask): counted as calls are made, the task stops when spent. */
  projectMetaCalls?: SharedMetaCalls;
}

/** Replaceable pieces, for tests and benchmarks; everything else is the real thing. */
export interface AppDependencies {
  docker?: Docker;
  runtime?: SandboxRuntime;
  metaModel?: MetaModel;
  worker?: WorkerAdapter;
  human?: HumanPort;
  clock?: Clock;
}

/** The longest the Docker side waits for the plan request to leave before it starts anyway. */
const PLAN_HEAD_START_MS = 300;

/** A task id from the PRD's title: `add-slugify-3f9a1c`. */
export function newTaskId(prd: string): string {
  const slug = titleOf(prd, 'task')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${slug || 'task'}-${randomBytes(3).toString('hex')}`;
}

/** The worker image the config asks for: `sandbox.image`, else the tag of the package's Dockerfile. */
export async function resolveWorkerImage(config: Config): Promise<string> {
  if (config.sandbox.image) return config.sandbox.image;
  const inputs = await readWorkerImageInputs({
    codexVersion: config.worker.codexVersion,
    baseImage: config.sandbox.baseImage,
  });
  return workerImageTag(inputs);
}

async function ensureImage(docker: Docker, image: string): Promise<void> {
  try {
    await docker.getImage(image).inspect();
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) {
      throw new EnvironmentError(
        'image_missing',
        `The worker image ${image} is not built. Build it with \`agent-runner image build\` (or \`bash scripts/setup.sh\` in the agent-runner checkout).`,
      );
    }
    throw error;
  }
}

/**
 * Pings the engine, sweeps this repository's orphaned sandboxes, checks the worker image and resolves the
 * task's image (the toolchain the repository declares); returns it and the set-up commands to run.
 */
async function startDockerSide(
  docker: Docker,
  runtime: SandboxRuntime,
  request: RunTaskRequest,
): Promise<{ image: string; setup: string[] }> {
  const { config, env, repoRoot } = request;
  const { pingDocker } = await import('./sandbox/docker-client.js');
  await pingDocker(docker, env);
  // Containers of this repository whose runner died (kill -9, a crash, the engine lost mid-run).
  const { orphans, kept } = await findDeadOwnerSandboxes(runtime, { repoRoot });
  for (const sandbox of kept)
    request.onNotice?.(
      `left container ${sandbox.name} of task ${sandbox.taskId} alone: it was kept with --keep-sandbox (agent-runner gc removes it)`,
    );
  if (orphans.length > 0) {
    const swept = await removeSandboxes(runtime, orphans);
    for (const sandbox of swept.removed)
      request.onNotice?.(
        `removed container ${sandbox.name} of task ${sandbox.taskId}, left by pid ${sandbox.pid} (no longer running)`,
      );
  }
  const workerImage = await resolveWorkerImage(config);
  await ensureImage(docker, workerImage);
  // Imported here like dockerode: tar-fs and the image builder are not needed before the plan request.
  const [{ buildWorkerImage }, { rememberedCa }, { IMAGE_EXTRA_CA_PATH, runInImage }, { resolveTaskImage }] =
    await Promise.all([
      import('./sandbox/image-builder.js'),
      import('./sandbox/remembered-ca.js'),
      import('./toolchain/run-in-image.js'),
      import('./toolchain/toolchain-image.js'),
    ]);
  // The toolchain the repository declares: a derived image built once (own tag from its inputs) and reused.
  const taskImage = await resolveTaskImage({
    docker,
    config,
    repoRoot,
    env,
    workerImage,
    buildWorkerOn: async (base) => {
      // The CA: configured, else remembered from the last build, else the one the worker image trusts.
      const extraCa = config.sandbox.extraCaCert
        ? path.resolve(repoRoot, config.sandbox.extraCaCert)
        : await rememberedCa(env);
      const imageCa = extraCa
        ? undefined
        : await runInImage(docker, workerImage, ['cat', IMAGE_EXTRA_CA_PATH]);
      request.onNotice?.(`building the worker on ${base} (once; reused while its inputs are unchanged)`);
      const built = await buildWorkerImage(docker, {
        baseImage: base,
        codexVersion: config.worker.codexVersion,
        projectBase: true,
        ...(extraCa ? { extraCaCertPath: extraCa } : {}),
        ...(imageCa ? { extraCa: imageCa } : {}),
      });
      return built.tag;
    },
    onProgress: (line) => request.onNotice?.(line),
  });
  const image = taskImage.image;
  for (const layer of taskImage.layers) request.onNotice?.(`sandbox toolchain: ${layer} (image ${image})`);
  return { image, setup: [...taskImage.setup, ...config.sandbox.setup] };
}

/** Runs one task to a terminal state with the real adapters. */
export async function runTask(
  request: RunTaskRequest,
  dependencies: AppDependencies = {},
): Promise<TaskSummary> {
  if (!request.modelScript) return runTaskWith(request, dependencies);
  const taskId = request.taskId ?? newTaskId(request.prd);
  const server = await startScriptedModelServer(await readModelScript(request.modelScript, taskId));
  try {
    const config: Config = {
      ...request.config,
      meta: { ...request.config.meta, baseUrl: server.baseUrl },
      worker: { ...request.config.worker, baseUrl: server.baseUrl },
    };
    const env = {
      ...request.env,
      [config.meta.apiKeyEnv]: request.env[config.meta.apiKeyEnv] || 'scripted-model',
    };
    if (config.worker.apiKeyEnv)
      env[config.worker.apiKeyEnv] = env[config.worker.apiKeyEnv] || 'scripted-model';
    return await runTaskWith({ ...request, taskId, config, env }, dependencies);
  } finally {
    await server.close();
  }
}

async function runTaskWith(request: RunTaskRequest, dependencies: AppDependencies): Promise<TaskSummary> {
  const taskId = request.taskId ?? newTaskId(request.prd);
  const layout = taskLayout(request.repoRoot, taskId);
  await mkdir(layout.runDir, { recursive: true });
  // One task, one runner: refuses (exit 2) while another live process works on this task id.
  const lock = acquireTaskLock(layout.runDir, { taskId, command: request.resume ? 'resume' : 'run' });
  try {
    if (lock.tookOver) {
      request.onNotice?.(
        `took over the lock of task ${taskId} left by pid ${lock.tookOver.pid} (${lock.tookOver.command}, started ${lock.tookOver.startedAt}), which is no longer running`,
      );
    }
    return await runLockedTask(request, dependencies, taskId);
  } finally {
    lock.release();
  }
}

async function runLockedTask(
  request: RunTaskRequest,
  dependencies: AppDependencies,
  taskId: string,
): Promise<TaskSummary> {
  const { config, env, repoRoot } = request;
  const layout = taskLayout(repoRoot, taskId);
  const metaKey = env[config.meta.apiKeyEnv];
  // One redaction point for every writer of this task: journal, note, logs, meta call logs, cassette, stdout.
  const redaction = request.redaction ?? new Redaction();
  const secrets = configSecrets(config, env);
  redaction.add(secrets.values, secrets.patterns);
  const redact: Redactor = redaction.redact;
  // The gateway holds the real keys; the sandbox gets a per-task token and only the network its policy allows.
  const stamp = () => new Date((dependencies.clock ?? systemClock).now()).toISOString();
  let recordEvent: (event: StampedEvent) => void = () => {};
  const previous = request.resume?.previous;
  // Loading dockerode holds the event loop for a while (it is most of the Docker side's start): the Docker
  // side waits until the plan request has left, or at most PLAN_HEAD_START_MS, or not at all when the task
  // has its plan already (a resume after planning, a plan given by parallel work) or its planning failed.
  let planLeft = () => {};
  const planSent = new Promise<void>((resolve) => (planLeft = resolve));
  if (previous?.plan || request.plan || request.planError !== undefined) planLeft();
  else setTimeout(planLeft, PLAN_HEAD_START_MS).unref();
  const gateway = await startTaskGateway({
    config,
    env,
    repoRoot,
    redaction,
    onLog: (line) => {
      try {
        appendFileSync(path.join(layout.runDir, 'gateway.log'), `${stamp()} ${redact(line)}\n`);
      } catch {
        // A full disk stops the task through the journal; the gateway keeps answering meanwhile.
      }
    },
    onSent: (kind) => {
      if (kind === 'meta') planLeft();
    },
    onRefusal: (refusal) => {
      try {
        recordEvent({ type: 'gateway_refused', refusal, at: stamp() });
      } catch {
        // As above: the runner's own next event reports the journal's failure.
      }
    },
    ...(previous
      ? {
          spent: {
            tokens:
              previous.usage.inputTokens +
              previous.usage.outputTokens +
              (previous.workerUsage
                ? previous.workerUsage.inputTokens + previous.workerUsage.outputTokens
                : 0),
            costUsd: previous.usage.costUsd + (previous.workerUsage?.costUsd ?? 0),
          },
        }
      : request.plan
        ? // The planning call made before the task started counts like the task's own would have.
          {
            spent: {
              tokens: request.plan.usage.inputTokens + request.plan.usage.outputTokens,
              costUsd: request.plan.usage.costUsd,
            },
          }
        : {}),
    ...(request.projectBudget ? { parentBudget: request.projectBudget } : {}),
    ...(request.record ? { record: request.record, appendRecord: request.resume !== undefined } : {}),
    ...(request.replay ? { replay: request.replay, attempt: request.resume?.attempt ?? 1 } : {}),
  });
  try {
    const metaModel = new GatewayCheckedMetaModel(
      dependencies.metaModel ??
        // Under --replay no key is needed: the gateway answers from the cassette.
        createOpenAiChatModel(
          config,
          request.replay ? { ...env, [config.meta.apiKeyEnv]: metaKey || 'replay' } : env,
          { baseUrl: gateway.meta.baseUrl, apiKey: gateway.meta.apiKey, displayUrl: config.meta.baseUrl },
        ),
      gateway.gateway,
      gateway.budget,
    );
    const patterns = await loadPatternLibrary(config.patterns.dirs.map((dir) => path.resolve(repoRoot, dir)));
    const metaAgent = createMetaAgent({
      model: metaModel,
      config,
      logDir: path.join(layout.runDir, 'meta'),
      redact,
    });

    const workerModel = config.worker.model ?? config.meta.model;
    // The Docker side runs while the Meta-agent plans (planning needs only the PRD, the config and the memory);
    // the loop's ports wait for it, and its failure fails the workspace's preparation, which stops the planning.
    let runtime: SandboxRuntime | null = null;
    const dockerSide = (async (): Promise<DockerSidePorts> => {
      await planSent;
      // Imported here: dockerode is the biggest module of the start and planning does not need it.
      const [client, { DockerSandboxRuntime }] = await Promise.all([
        import('./sandbox/docker-client.js'),
        import('./sandbox/docker-runtime.js'),
      ]);
      const docker = dependencies.docker ?? client.createDockerClient(env);
      runtime = new EngineWatchRuntime(
        dependencies.runtime ?? new DockerSandboxRuntime(docker, { version: VERSION, env, redact }),
        { taskId, dockerHost: client.describeDockerHost(env) },
      );
      const { image, setup } = await startDockerSide(docker, runtime, request);
      return buildDockerPorts(runtime, image, setup);
    })();
    // Handled here; the loop's first call (the workspace's preparation) reports the failure.
    dockerSide.catch(() => undefined);
    // Set-up runs inside sandboxes.setUp(): its commands go to the progress, the journal and the note.
    const setupReports: SetupCommandReport[] = [];
    const onSetupReport = (report: SetupCommandReport): void => {
      if (report.phase === 'finished') setupReports.push(report);
      const event: StampedEvent = { type: 'setup_command', ...report, at: new Date().toISOString() };
      request.onEvent?.(event);
      journal.append(event);
    };
    let taskWorkspace: GitTaskWorkspace | null = null;
    function buildDockerPorts(runtime: SandboxRuntime, image: string, setup: string[]): DockerSidePorts {
      const { workspace, sandboxes } = taskSandboxPorts({
        runtime,
        config,
        image,
        repoRoot,
        taskId,
        ...(request.base !== undefined ? { base: request.base } : {}),
        dodSkipped: request.dodSkipped,
        gateway,
        setup: { signal: request.signal, onReport: onSetupReport, commands: setup },
        keep: request.keepSandbox,
        ...(request.onKept ? { onKept: request.onKept } : {}),
        labels: keptSandboxLabels(request.keepSandbox),
      });
      const codexHomeHostPath = path.join(layout.runDir, 'codex-home');
      const worker = new GatewayMeteredWorker(
        dependencies.worker ??
          new StateRedactingWorker(
            new CodexWorkerAdapter(runtime, {
              model: workerModel,
              provider: { ...gateway.codexProvider, requestMaxRetries: 2, streamMaxRetries: 2 },
              configOverrides: gateway.codexConfigOverrides,
              codexHome: CODEX_HOME_IN_SANDBOX,
              codexHomeHostPath,
            }),
            codexHomeHostPath,
            redact,
          ),
        gateway.gateway,
      );
      taskWorkspace = workspace;
      return { workspace, sandboxes, worker };
    }
    const ports = deferredPorts(dockerSide, dependencies.worker?.type ?? config.worker.type);
    // JSON-aware: every string of an event is redacted and the line stays valid JSON.
    const journal = new EventJournal(layout.runDir, redaction.redactJsonText);
    recordEvent = (event) => {
      request.onEvent?.(event);
      journal.append(event);
    };
    const runner = new TaskRunner(
      {
        taskId,
        prd: request.prd,
        startOptions: {
          prdPath: request.prdPath,
          prd: request.prd,
          ...(request.base !== undefined ? { base: request.base } : {}),
          dodSkipped: request.dodSkipped,
          ...(request.resume ? { resumed: true } : {}),
          ...(request.keepSandbox ? { keepSandbox: true } : {}),
          ...(request.record ? { record: request.record } : {}),
          ...(request.replay ? { replay: request.replay } : {}),
        },
        ...(request.resume ? { previous: request.resume.previous } : {}),
        ...(request.plan ? { givenPlan: request.plan } : {}),
        ...(request.planError !== undefined ? { planError: request.planError } : {}),
        limits: {
          maxIterations: config.limits.maxIterations,
          maxMetaCalls: config.limits.maxMetaCalls,
          wallClockMs: config.limits.wallClock,
          ...(config.limits.maxTokens !== undefined ? { maxTokens: config.limits.maxTokens } : {}),
          ...(config.limits.maxCostUsd !== undefined ? { maxCostUsd: config.limits.maxCostUsd } : {}),
          maxStalls: config.limits.maxStalls,
        },
        worker: {
          type: config.worker.type,
          model: workerModel,
          timeoutMs: config.worker.timeout,
          graceMs: config.worker.grace,
        },
        prices: config.prices,
        dodSkipped: request.dodSkipped || config.dod.skip,
        headless: request.headless,
        patterns,
        runDir: layout.runDir,
      },
      {
        meta: new MetaAgentPortAdapter(metaAgent),
        ...ports,
        human: dependencies.human ?? request.human ?? { ask: async () => null },
        notes: { readMemory: (exclude) => readNoteMemory(layout.stateDir, exclude) },
        clock: dependencies.clock ?? systemClock,
        ...(request.projectMetaCalls ? { sharedMetaCalls: request.projectMetaCalls } : {}),
        writeNote: (record) =>
          writeTaskNote(record, {
            agentRunnerDir: layout.stateDir,
            repository: repoRoot,
            prdPath: request.prdPath,
            workerModel,
            redact,
            setup: setupReports,
            ...(config.notes.template ? { templatePath: path.resolve(repoRoot, config.notes.template) } : {}),
          }),
        onEvent: (event) => {
          if (event.type === 'sandbox_started') sandboxId = event.sandboxId;
          if (event.type === 'worker_started') workerRunning = true;
          if (event.type === 'worker_finished') workerRunning = false;
          request.onEvent?.(event);
          // Last, so the person still sees the event when the journal cannot be written (it then throws).
          journal.append(event);
        },
      },
    );
    let sandboxId: string | null = null;
    let workerRunning = false;
    const onHurry = () => {
      // Only while the worker runs: later steps (saving its uncommitted work) must not be cut short.
      if (sandboxId && workerRunning && runtime)
        void runtime.exec(sandboxId, hurryKillArgv(), { timeoutMs: 5_000, graceMs: 0 }).catch(() => {});
    };
    request.hurry?.addEventListener('abort', onHurry, { once: true });
    try {
      return await runner.run(request.signal);
    } finally {
      request.hurry?.removeEventListener('abort', onHurry);
      // Nothing of the Docker side (a sweep, an image inspect, the worktree's checkout) outlives the task's lock.
      await dockerSide.catch(() => undefined);
      await (taskWorkspace as GitTaskWorkspace | null)?.settled();
    }
  } finally {
    await gateway.close();
  }
}
