/**
 * The CLI verbs that talk to the repository's server, thin clients of its API: `run --detach` (start a task
 * and return its id at once; a server is started on demand, detached, when none runs), `wait ID...` (until
 * every task ended; the highest exit code), `logs [-f] ID` (its progress, as `run` prints it) and
 * `answer ID TEXT` (its `ask_human` question) and `stop ID` (as Ctrl-C; again to hurry). They work the same for
 * tasks started from the web page, and `wait` and `logs` for tasks started by `run` in a terminal (the server
 * reads the same journals). With `--server URL` (the token in AGENT_RUNNER_TOKEN, never on the command line)
 * they talk to that server instead of the repository's: any node of a fleet serves every task of the fleet.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import type { StampedEvent } from '../core/events.js';
import { askedQuestion } from '../core/records.js';
import type { TaskSummary } from '../core/types.js';
import { EXIT_CODES, UserError } from '../errors.js';
import type { FleetTaskDetail } from '../control/fleet-events.js';
import { ServeClient, readServeInfo, type ServeInfo } from '../serve/api-client.js';
import { isInRepository } from '../serve/repository-path.js';
import { PACKAGE_ROOT } from '../version.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import { createProgressPrinter, formatSummary } from './progress.js';
import type { CommandContext } from './program.js';
import { summaryObject, type RunCommandOptions } from './run-command.js';
import { flagsLayer } from './run-flags.js';

/** How long an idle server started on demand stays (no task of its own running, no request). */
export const ON_DEMAND_IDLE = '10m';
const SERVER_START_MS = 20_000;

/** The repository's server: the running one, or one started now, detached, that exits when idle. */
async function serverFor(repoRoot: string, context: CommandContext): Promise<ServeClient> {
  let info: ServeInfo | null = await readServeInfo(repoRoot);
  if (info === null) {
    const stateDir = path.join(repoRoot, '.agent-runner');
    await mkdir(stateDir, { recursive: true });
    const log = openSync(path.join(stateDir, 'serve.log'), 'a');
    const bin = path.join(PACKAGE_ROOT, 'bin', 'agent-runner.js');
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--idle-exit', ON_DEMAND_IDLE], {
      cwd: repoRoot,
      env: context.env,
      detached: true,
      stdio: ['ignore', log, log],
    });
    child.unref();
    const deadline = Date.now() + SERVER_START_MS;
    while (info === null && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      info = await readServeInfo(repoRoot);
    }
    if (info === null)
      throw new UserError(
        'usage',
        `The agent-runner server did not start within ${SERVER_START_MS / 1000} s: see ${path.join(stateDir, 'serve.log')}.`,
      );
    context.output.err(
      `agent-runner: started a server for this repository at ${info.url} (it exits when idle)`,
    );
  }
  return new ServeClient(info.url, info.token);
}

/**
 * A file the owner names for a detached task (`--prd`, `--model-script`): the server reads only files of the
 * repository, so one outside it is copied into `.agent-runner/inputs/` (the owner may read it; the server's
 * clients may not name it).
 */
async function forServer(root: string, file: string, flag: string): Promise<string> {
  if (await isInRepository(root, file)) return file;
  const directory = path.join(root, '.agent-runner', 'inputs');
  await mkdir(directory, { recursive: true });
  const copy = path.join(directory, `${randomBytes(4).toString('hex')}-${path.basename(file)}`);
  await copyFile(file, copy).catch((error: unknown) => {
    throw new UserError('usage', `${flag} ${file}: cannot read it (${(error as Error).message}).`);
  });
  return copy;
}

/** `run --detach`: the task is started by the server; its id is printed at once. */
export async function detachRun(options: RunCommandOptions, context: CommandContext): Promise<void> {
  for (const [flag, given] of [
    ['--record', options.record],
    ['--replay', options.replay],
    ['--keep-sandbox', options.keepSandbox],
    ['--config', options.config],
    ['--push', options.push],
    ['--pr', options.pr],
    ['--forge', options.forge],
  ] as const)
    if (given)
      throw new UserError(
        'usage',
        `${flag} is not available with --detach: run the task in this terminal instead.`,
      );
  const repository = await inspectRepository(context.cwd);
  const client = await serverFor(repository.root, context);
  const overrides = flagsLayer(options);
  if (options.single) Object.assign(overrides, { parallel: { split: 'never' } });
  const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
    prdPath: await forServer(repository.root, path.resolve(context.cwd, options.prd), '--prd'),
    ...(options.taskId !== undefined ? { taskId: options.taskId } : {}),
    ...(options.base !== undefined ? { base: options.base } : {}),
    ...(options.skipDod ? { skipDod: true } : {}),
    ...(options.modelScript
      ? {
          modelScript: await forServer(
            repository.root,
            path.resolve(context.cwd, options.modelScript),
            '--model-script',
          ),
        }
      : {}),
    config: overrides,
  });
  if (options.json) context.output.out(JSON.stringify({ type: 'detached', taskId, server: client.url }));
  else {
    context.output.out(taskId);
    context.output.err(
      `agent-runner: ${taskId} runs in the background; follow it with \`agent-runner logs -f ${taskId}\`, ` +
        `wait for it with \`agent-runner wait ${taskId}\`, or watch it at ${client.url}`,
    );
  }
}

/** The variable `--server` reads its token from (a token in argv would show in `ps`). */
export const SERVER_TOKEN_VARIABLE = 'AGENT_RUNNER_TOKEN';

/** A URL's scheme (`http:`), or '' when it is no URL (`URL.parse` is Node 20.18+; we support all of 20). */
function protocolOf(text: string): string {
  try {
    return new URL(text).protocol;
  } catch {
    return '';
  }
}

/** Which server a client command talks to: `--server URL`, else the repository's. */
export interface ServerOption {
  server?: string;
}

export async function clientHere(context: CommandContext, options: ServerOption = {}): Promise<ServeClient> {
  if (options.server === undefined)
    return ServeClient.forRepository((await inspectRepository(context.cwd)).root);
  const token = context.env[SERVER_TOKEN_VARIABLE];
  if (!token)
    throw new UserError(
      'usage',
      `--server ${options.server}: set ${SERVER_TOKEN_VARIABLE} to the server's token (\`serve\` prints it).`,
    );
  if (!/^https?:$/.test(protocolOf(options.server)))
    throw new UserError(
      'usage',
      `--server ${options.server}: give the server's URL, e.g. http://127.0.0.1:7770.`,
    );
  context.redaction.add([token]);
  // A path is kept: a server behind a proxy under a prefix.
  return new ServeClient(options.server.replace(/\/+$/, ''), token);
}

/** Follows one task to its end; its summary (null: it ended without one, e.g. its runner died). */
async function waitFor(
  client: ServeClient,
  taskId: string,
): Promise<{ taskId: string; summary: TaskSummary | null; fleet: FleetTaskDetail | null }> {
  for await (const event of client.events(taskId)) void event;
  const detail = await client.request<{ summary?: TaskSummary | null } | FleetTaskDetail>(
    'GET',
    `/api/tasks/${taskId}`,
  );
  // A task another node ran (served from the control database): its row's state and exit code, no summary here.
  if ('fleet' in detail) return { taskId, summary: null, fleet: detail };
  return { taskId, summary: detail.summary ?? null, fleet: null };
}

export async function waitCommand(
  taskIds: string[],
  options: { json?: boolean } & ServerOption,
  context: CommandContext,
): Promise<void> {
  const client = await clientHere(context, options);
  const results = await Promise.all(taskIds.map((taskId) => waitFor(client, taskId)));
  let worst: number = EXIT_CODES.complete;
  for (const { taskId, summary, fleet } of results) {
    const code = summary?.exitCode ?? fleet?.exitCode ?? EXIT_CODES.failed;
    worst = Math.max(worst, code);
    if (options.json)
      context.output.out(
        JSON.stringify(
          summary
            ? context.redaction.value(summaryObject(summary))
            : { type: 'summary', taskId, state: fleet?.state ?? null, exitCode: code },
        ),
      );
    else if (summary) for (const line of formatSummary(summary)) context.output.out(line);
    else if (fleet)
      context.output.out(
        `${taskId}: ${fleet.state} (exit ${code}) on node ${fleet.node?.id ?? 'none'}: its note is on that node`,
      );
    else
      context.output.out(
        `${taskId}: ended without a summary (its runner stopped): \`agent-runner resume ${taskId}\``,
      );
  }
  context.setExitCode(worst);
}

export async function logsCommand(
  taskId: string,
  options: { follow?: boolean } & ServerOption,
  context: CommandContext,
): Promise<void> {
  const client = await clientHere(context, options);
  const print = createProgressPrinter((line) => context.output.out(line));
  // A question is the one thing a follower must act on: its text, one line, as it is asked.
  const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
  for await (const message of client.events(taskId, { follow: Boolean(options.follow) })) {
    if (message.event !== 'journal') continue;
    const event = JSON.parse(message.data) as StampedEvent;
    print(event);
    if (event.type === 'decision' && event.decision.action === 'ask_human')
      context.output.out(`        asks: ${oneLine(askedQuestion(event.decision))}`);
  }
  if (options.follow) return;
  // What the journal cannot say: whether the question still waits (here, or on the node of the fleet that runs it).
  const detail = await client.request<{ question?: string | null }>('GET', `/api/tasks/${taskId}`);
  if (detail.question)
    context.output.out(
      `waiting for an answer: ${oneLine(detail.question)} (\`agent-runner answer ${taskId} "..."\`)`,
    );
}

export async function answerCommand(
  taskId: string,
  text: string,
  context: CommandContext,
  options: ServerOption = {},
): Promise<void> {
  const client = await clientHere(context, options);
  const answer = await client.request<{ node?: string }>('POST', `/api/tasks/${taskId}/answer`, { text });
  context.output.err(
    `agent-runner: answered ${taskId}${answer.node ? ` (sent to node ${answer.node}, which runs it)` : ''}`,
  );
}

/** `stop ID`: as Ctrl-C stops `run` (the work saved, the note written); a second stop hurries it. */
export async function stopCommand(
  taskId: string,
  options: ServerOption,
  context: CommandContext,
): Promise<void> {
  const client = await clientHere(context, options);
  const answer = await client.request<{ stop: string; node?: string }>('POST', `/api/tasks/${taskId}/stop`);
  context.output.err(
    answer.stop === 'requested'
      ? `agent-runner: stop of ${taskId} sent to node ${answer.node ?? '?'}, which runs it`
      : `agent-runner: ${answer.stop} ${taskId}`,
  );
}

export function registerClientCommands(program: Command, context: CommandContext): void {
  program
    .command('wait')
    .description(
      'Wait for tasks (started with --detach, from the web view, or in a terminal) to end; exit with the highest exit code.',
    )
    .argument('<id...>', 'task ids')
    .option('--json', 'one summary object per task on stdout')
    .option(
      '--server <url>',
      `a server's URL instead of the repository's (its token in ${SERVER_TOKEN_VARIABLE})`,
    )
    .action(async (taskIds: string[], options: { json?: boolean } & ServerOption) => {
      await waitCommand(taskIds, options, context);
    });
  program
    .command('logs')
    .description("A task's progress, as `run` prints it")
    .argument('<id>', 'task id')
    .option('-f, --follow', 'keep following until the task ends')
    .option(
      '--server <url>',
      `a server's URL instead of the repository's (its token in ${SERVER_TOKEN_VARIABLE})`,
    )
    .action(async (taskId: string, options: { follow?: boolean } & ServerOption) => {
      await logsCommand(taskId, options, context);
    });
  program
    .command('answer')
    .description("Answer a task's question (ask_human) when it runs in the background")
    .argument('<id>', 'task id')
    .argument('<text>', 'the answer')
    .option(
      '--server <url>',
      `a server's URL instead of the repository's (its token in ${SERVER_TOKEN_VARIABLE})`,
    )
    .action(async (taskId: string, text: string, options: ServerOption) => {
      await answerCommand(taskId, text, context, options);
    });
  program
    .command('stop')
    .description(
      'Stop a task running in the background as Ctrl-C does (its work saved, its note written); again to hurry',
    )
    .argument('<id>', 'task id')
    .option(
      '--server <url>',
      `a server's URL instead of the repository's (its token in ${SERVER_TOKEN_VARIABLE})`,
    )
    .action(async (taskId: string, options: ServerOption) => {
      await stopCommand(taskId, options, context);
    });
}
