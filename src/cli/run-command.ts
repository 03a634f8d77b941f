/**
 * `agent-runner run --prd FILE`: the product. Live progress on stderr for people; `--json` prints JSONL
 * events on stdout and ends with a summary object. The exit code says how it ended (README: exit codes).
 */
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { newTaskSpec } from '../compose/new-task-spec.js';
import { loadPrd } from '../prd/load-prd.js';
import type { TaskSpec } from '../compose/task-spec.js';
import type { TaskSummary } from '../core/types.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import { createProjectProgress } from '../parallel/project-progress.js';
import type { ProjectHooks, ProjectOptions } from '../parallel/run-project.js';
import { createProgressPrinter, formatSummary } from './progress.js';
import type { CommandContext } from './program.js';
import { flagsLayer, RUNTIME_FLAG, RUNTIME_FLAG_HELP } from './run-flags.js';
import { WORKER_TYPES } from '../worker/worker-kinds.js';
import { UserError } from '../errors.js';
import { taskLayout } from '../workspace/layout.js';
import type { DeliveryOutcome } from '../deliver/delivery-record.js';
import { forgeTokens } from '../remote/remote-credentials.js';
import { namedForge, type ForgeKind } from '../remote/remote-url.js';
import {
  deliverAfterTask,
  deliverySettings,
  exitCodeAfterDelivery,
  reportDelivery,
} from './deliver-command.js';

/** Where a `--repo` task's repository is: its credential-free URL and its cached clone. */
export interface RemoteWhere {
  url: string;
  root: string;
}

export interface RunCommandOptions {
  prd: string;
  /** An issue's page: its title and body are the PRD, and the request closes it (src/cli/from-issue.ts). */
  fromIssue?: string;
  /** `--repo URL`: a remote repository, worked on in its cached clone (no local checkout needed). */
  repo?: string;
  taskId?: string;
  base?: string;
  worker?: string;
  model?: string;
  maxIterations?: string;
  timeout?: string;
  skipDod?: boolean;
  json?: boolean;
  headless?: boolean;
  keepSandbox?: boolean;
  config?: string;
  modelScript?: string;
  record?: string;
  replay?: string;
  single?: boolean;
  detach?: boolean;
  /** With --detach and --repo: the fleet's control database. */
  control?: string;
  /** Push `agent-runner/<ID>` after the task (deliver.push). */
  push?: boolean;
  /** Push and open or update the pull/merge request after the task (deliver.pr). */
  pr?: boolean;
  /** The forge when the remote's host does not say (deliver.forge); with `--repo`, also for the clone. */
  forge?: string;
  /** The issue the request closes and replies on (deliver.closes). */
  closes?: string;
  /** The OCI runtime of the task's containers (sandbox.runtime). */
  runtime?: string;
}

/** The summary object `--json` ends with (`delivery`: null when none was asked). */
export function summaryObject(
  summary: TaskSummary,
  delivery: DeliveryOutcome | null = null,
): Record<string, unknown> {
  return {
    type: 'summary',
    state: summary.state,
    reason: summary.reason,
    taskId: summary.taskId,
    branch: summary.branch,
    headSha: summary.headSha,
    notePath: summary.notePath,
    worktreePath: summary.worktreePath,
    runs: summary.runs,
    metaCalls: summary.metaCalls,
    usage: summary.usage,
    costUsd: summary.usage.total.costUsd,
    durationMs: summary.durationMs,
    exitCode: summary.exitCode,
    error: summary.error,
    basis: summary.basis,
    criteria: summary.criteria,
    rootCause: summary.rootCause ?? null,
    diskCaps: summary.diskCaps ?? null,
    sandboxRuntime: summary.sandboxRuntime ?? null,
    followup: summary.followup ?? null,
    delivery,
  };
}

export async function runCommand(options: RunCommandOptions, context: CommandContext): Promise<TaskSummary> {
  const { env } = context;
  // Loaded while the PRD, the repository and the config are read (git runs meanwhile): what the first Meta-agent
  // request needs, the app and the planner with the gateway and the model's SDK. The task's composition
  // (workspace, sandbox, runner, notes) loads once that request has left.
  import('../app.js').catch(() => undefined);
  import('../parallel/run-project.js')
    // Node compiles its fetch (undici, under the model's SDK) on first use: done here too, not on the request's path.
    .then(() => globalThis.Headers)
    .catch(() => undefined);
  // The PRD first, then the repository: the errors come in the order a person fixes them.
  const prdPath = path.resolve(context.cwd, options.prd);
  const prd = await loadPrd(prdPath);
  const remote = options.repo
    ? await cachedRemote(options.repo, options.base, namedForge(options.forge, env), context)
    : null;
  const repoRoot = remote ? remote.root : (await inspectRepository(context.cwd)).root;
  const models = {
    ...(options.modelScript ? { script: path.resolve(context.cwd, options.modelScript) } : {}),
    ...(options.record ? { record: path.resolve(context.cwd, options.record) } : {}),
    ...(options.replay ? { replay: path.resolve(context.cwd, options.replay) } : {}),
  };
  return driveTask(
    await newTaskSpec({
      repoRoot,
      prdPath,
      prd,
      env,
      overrides: flagsLayer(options),
      ...(options.config ? { configFile: path.resolve(context.cwd, options.config) } : {}),
      ...(options.taskId !== undefined ? { taskId: options.taskId } : {}),
      ...(remote ? { base: remote.baseSha } : options.base !== undefined ? { base: options.base } : {}),
      models,
      keepSandbox: Boolean(options.keepSandbox),
      skipDod: Boolean(options.skipDod),
    }),
    options.single ? { single: true } : {},
    { ...options, ...(remote ? { remote } : {}) },
    context,
  );
}

/**
 * `--repo`: the remote's cached clone fetched (or cloned the first time) and checked out at the base, its
 * credentials added to the process's redaction before anything is printed.
 */
async function cachedRemote(
  url: string,
  base: string | undefined,
  forge: ForgeKind | null,
  context: CommandContext,
): Promise<RemoteWhere & { baseSha: string }> {
  const { prepareRepositoryCache } = await import('../remote/repository-cache.js');
  const cached = await prepareRepositoryCache({
    url,
    env: context.env,
    forge,
    ...(base !== undefined ? { base } : {}),
  });
  context.redaction.add(cached.secrets);
  context.output.err(
    `agent-runner: ${cached.how} ${cached.url} (${cached.baseBranch} at ${cached.baseSha.slice(0, 12)}) in ${cached.root}`,
  );
  return { url: cached.url, root: cached.root, baseSha: cached.baseSha };
}

/** The summary: one `--json` object, or lines for people; a `--repo` task's adds where its results are. */
function printSummary(
  summary: TaskSummary,
  options: { json?: boolean; remote?: RemoteWhere },
  context: CommandContext,
  delivery: DeliveryOutcome | null,
): void {
  const { output, redaction } = context;
  const remote = options.remote;
  if (options.json) {
    const where = remote
      ? { repository: remote.url, cache: remote.root, runDir: taskLayout(remote.root, summary.taskId).runDir }
      : {};
    output.out(JSON.stringify(redaction.value({ ...summaryObject(summary, delivery), ...where })));
    return;
  }
  if (summary.error) output.err(`agent-runner: ${summary.error.message}`);
  for (const line of formatSummary(summary)) output.out(line);
  if (remote) for (const line of remoteLines(remote, summary.taskId)) output.out(line);
  if (delivery) reportDelivery(delivery, context);
}

/** The lines that tell a person with no checkout where the task's results are. */
export function remoteLines(where: RemoteWhere, taskId: string): string[] {
  const layout = taskLayout(where.root, taskId);
  return [`  repo:     ${where.url}`, `  cache:    ${where.root}`, `  run data: ${layout.runDir}`];
}

/**
 * Runs a task with live progress (or `--json`), Ctrl-C handling (first: stop and save; second: kill the
 * worker at once; the note is written either way) and the summary; sets the exit code. Shared by `resume`.
 */
export async function driveTask(
  spec: TaskSpec,
  projectOptions: ProjectOptions,
  options: { json?: boolean; headless?: boolean; remote?: RemoteWhere },
  context: CommandContext,
): Promise<TaskSummary> {
  const { output, env, redaction } = context;
  const { createApp } = await import('../app.js');
  // The task adds its configuration's keys and `redact.patterns` to the process's redaction point (stdout and
  // stderr included) before it reports anything; forge tokens (delivery's, host-only) are hidden from it too.
  const app = createApp(env, {}, redaction);
  if (spec.config.deliver.push || spec.config.deliver.pr) redaction.add(forgeTokens(env));
  const headless = Boolean(options.headless || env.CI || !process.stdin.isTTY || !output.isTTY);
  const progress = createProjectProgress(output, {
    tty: output.isTTY,
    single: createProgressPrinter((line) => output.err(line)),
  });
  const controller = new AbortController();
  const hurry = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts += 1;
    if (interrupts === 1) {
      output.err(
        `agent-runner: ${signal}: stopping the worker, saving its work and writing the note (again to hurry)`,
      );
      controller.abort();
    } else {
      output.err('agent-runner: stopping now (worker killed without grace); the note is still written');
      hurry.abort();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    // Planned first: one task as always, or a project of subtasks (parallel.split, --single).
    const hooks: ProjectHooks = {
      signal: controller.signal,
      hurry: hurry.signal,
      onNotice: (text) => output.err(`agent-runner: ${text}`),
      onEvent: (event) => {
        // Redacted before the progress line clips it: a secret cut in half would no longer match.
        const safe = redaction.value(event);
        if (options.json) output.out(JSON.stringify(safe));
        else progress(safe);
      },
      onKept: (sandboxId, execUser) =>
        output.err(
          `Sandbox kept for debugging: docker exec -it -u ${execUser} ${sandboxId} bash   (remove: docker rm -f ${sandboxId})`,
        ),
      ...(headless
        ? {}
        : {
            human: {
              ask: async (question: string) => {
                const prompt = createInterface({ input: process.stdin, output: process.stderr });
                try {
                  // readline writes the question itself: it is made printable like every other line.
                  return (await prompt.question(`\n${output.printable(question)}\n> `)).trim() || null;
                } finally {
                  prompt.close();
                }
              },
            },
          }),
    };
    const summary = await app.run(spec, hooks, projectOptions);
    await deliverAndReport(summary, spec, options, context);
    return summary;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * Delivers the task when asked (a step after its end: its state and note stand whatever the push and the request
 * do), then prints the summary and the delivery, or `--json`'s last object; sets the exit code.
 */
async function deliverAndReport(
  summary: TaskSummary,
  spec: TaskSpec,
  options: { json?: boolean; remote?: RemoteWhere },
  context: CommandContext,
): Promise<void> {
  const delivery = await deliverAfterTask(
    summary,
    { repoRoot: spec.repoRoot, settings: deliverySettings(spec.config.deliver, {}) },
    context,
  );
  printSummary(summary, options, context, delivery);
  context.setExitCode(exitCodeAfterDelivery(summary, delivery));
}

/** The options' own rules; `--from-issue` read into a PRD file and the issue the request closes. */
async function checkRunOptions(options: RunCommandOptions, context: CommandContext): Promise<void> {
  if (options.control !== undefined && !(options.detach && options.repo))
    throw new UserError('usage', '--control queues a task on the fleet: give it with --detach and --repo.');
  if ((options.prd === undefined) === (options.fromIssue === undefined))
    throw new UserError('usage', 'Give the task with exactly one of --prd FILE and --from-issue URL.');
  if (options.fromIssue !== undefined) {
    const { issueTask } = await import('./from-issue.js');
    const issue = await issueTask(options.fromIssue, context.env);
    Object.assign(options, { prd: issue.prdPath, closes: options.closes ?? String(issue.closes) });
  }
}

export function registerRunCommand(program: Command, context: CommandContext): void {
  program
    .command('run')
    .description('Run a task from a PRD to completion (or a precise account of why not), and write its note.')
    .option('--prd <file>', 'the PRD (Markdown) describing the task')
    .option(
      '--from-issue <url>',
      "instead of --prd: an issue's page; its title and body (quoted) are the PRD, and with --pr the request closes it",
    )
    .option('--task-id <id>', 'task id (default: from the PRD title plus a random suffix)')
    .option(
      '--repo <url>',
      'a remote git repository to work on, with no local checkout (cached under the state directory)',
    )
    .option(
      '--base <ref>',
      'base of the task branch (default: HEAD; with --repo, a branch, default its HEAD)',
    )
    .option(
      '--worker <type>',
      `the default worker (${WORKER_TYPES.join(', ')}); others come from workers.<type> blocks`,
    )
    .option('--model <name>', 'model for the Meta-agent (and the worker, unless worker.model is set)')
    .option('--max-iterations <n>', 'most worker runs')
    .option('--timeout <duration>', 'wall clock for the whole task, e.g. 45m')
    .option('--single', 'never split the PRD into subtasks (parallel.split: never for this run)')
    .option('--skip-dod', 'do not run the Definition-of-Done checks (recorded as skipped)')
    .option('--json', 'JSONL events on stdout, ending with a summary object')
    .option('--headless', 'never prompt (automatic when stdin is not a TTY or CI is set)')
    .option('--keep-sandbox', 'keep the container after the task, for debugging')
    .option(RUNTIME_FLAG, RUNTIME_FLAG_HELP)
    .option('--push', 'push agent-runner/<ID> to deliver.remote (origin) from this machine after the task')
    .option('--pr', 'push, then open or update the pull/merge request whose body is the evidence')
    .option(
      '--closes <issue>',
      'with --pr: the request closes this issue (`Closes #N`) and the issue gets a reply with the outcome',
    )
    .option(
      '--forge <github|gitlab>',
      'the forge when the remote is not on github.com or gitlab.com (also AGENT_RUNNER_FORGE); with --repo, its token answers the clone too',
    )
    .option('--config <file>', 'configuration file (default: agent-runner.yaml in the repository root)')
    .option(
      '--model-script <file>',
      'serve a scripted model from this YAML file instead of calling a real one (demo)',
    )
    .option('--record <file>', 'store every model exchange (Meta-agent and worker) in this cassette')
    .option(
      '--replay <file>',
      'answer every model call from this cassette, with no upstream (deterministic re-run)',
    )
    .option(
      '--detach',
      "start the task in the background (in the repository's server) and print its id at once",
    )
    .option(
      '--control <url>',
      'with --detach and --repo: queue the task on the fleet of this PostgreSQL (else control.url, AGENT_RUNNER_CONTROL_URL)',
    )
    .action(async (options: RunCommandOptions) => {
      await checkRunOptions(options, context);
      if (options.repo && options.detach) {
        const { enqueueFromCli } = await import('./control-command.js');
        if (await enqueueFromCli(options, context)) return;
        throw new UserError(
          'remote_failed',
          '--repo with --detach queues the task on a fleet, and no control database is given: add --control postgres://… (or set AGENT_RUNNER_CONTROL_URL), or drop --detach to run the task here.',
        );
      }
      if (options.detach) {
        const { detachRun } = await import('./client-commands.js');
        await detachRun(options, context);
        return;
      }
      await runCommand(options, context);
    });
}
