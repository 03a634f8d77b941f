/**
 * `agent-runner serve`: the second front door. One process serves the HTTP API (and the web view) for the
 * repository it starts in and runs the tasks it is asked to start, through the same composition as `run`.
 * It listens on 127.0.0.1:7770 by default; every request needs the random token it prints at start. Another
 * host only with `--host`, with a warning, and the token still required. Its address and token are written
 * to `.agent-runner/serve.json` (readable by the user alone), which `run --detach`, `wait`, `logs` and
 * `answer` read. Ctrl-C stops every task it runs as Ctrl-C stops `run` (the work saved, the notes written).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { webhookOptions } from './serve-webhooks.js';
import { parseDuration } from '../config/units.js';
import { UserError } from '../errors.js';
import { SERVE_FILE, type ServeInfo } from '../serve/api-client.js';
import { tryGit } from '../workspace/git/git-command.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import type { CommandContext } from './program.js';
import { joinFleet } from './serve-fleet.js';

export const DEFAULT_SERVE_PORT = 7770;

export interface ServeOptions {
  host?: string;
  port?: string;
  /** Exit after this long with no task of its own running and no request (a server started on demand). */
  idleExit?: string;
  /** A scripted model for every task that names none (the demo, with no key). */
  modelScript?: string;
  /** Serve a remote's cached clone (fetched now, cloned the first time) instead of the working directory's. */
  repo?: string;
  /** The control database: this server becomes a node of the fleet (else control.url, AGENT_RUNNER_CONTROL_URL). */
  control?: string;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);

/** A server that listens. */
export interface StartedServer {
  info: ServeInfo;
  repoRoot: string;
  /** A pure node of the fleet: no repository, fleet tasks only. */
  pure: boolean;
  idleFor: () => number;
  close: () => Promise<void>;
}

/** Starts the server; resolves once it listens, with a function that stops it (and its tasks). */
export async function startServer(options: ServeOptions, context: CommandContext): Promise<StartedServer> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port === undefined ? DEFAULT_SERVE_PORT : Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UserError('usage', `--port ${options.port}: give a port number (0 for any free one).`);
  const repository: { root: string; pure?: UserError } = options.repo
    ? await fetchedCache(options.repo, context)
    : await localRepository(context);
  // The repository's keys and patterns are hidden from every answer from the start.
  const config = await loadConfig({ repoRoot: repository.root, env: context.env, flags: {} });
  if (repository.pure && options.control === undefined && config.control.url === undefined)
    throw repository.pure;
  const [{ createApp }, { TaskBoard }, { PureNodeBoard }, { createApi }, { serve }, { parallelMax }] =
    await Promise.all([
      import('../app.js'),
      import('../serve/task-board.js'),
      import('../serve/pure-node-board.js'),
      import('../serve/http-api.js'),
      import('@hono/node-server'),
      import('../parallel/parallel-max.js'),
    ]);
  const app = createApp(context.env, {}, context.redaction);
  app.host.protect(config, context.env);
  // A pure node: its directory is no repository, and a task that needs one is refused saying how to queue it.
  const board = new (repository.pure ? PureNodeBoard : TaskBoard)(repository.root, app, context.env, {
    // As many tasks at once as a project's subtasks: parallel.max, or what the machine's cores and memory hold.
    maxRunning: parallelMax(config),
    ...(options.modelScript ? { modelScript: path.resolve(context.cwd, options.modelScript) } : {}),
  });
  const token = randomBytes(24).toString('base64url');
  let lastActivity = Date.now();
  const fleet = await joinFleet(options, config.control, parallelMax(config), app, context);
  const webhooks = await webhookOptions(config, repository.root, context, board, fleet);
  const api = createApi(board, {
    ...(webhooks ? { webhooks } : {}),
    token,
    // Named tokens and the audit log: the fleet's database, else this repository's state directory.
    ...(fleet ? fleet.api : await localIdentity(repository.root)),
    redaction: context.redaction,
    warn: (line) => context.output.err(`agent-runner serve: ${line}`),
    onRequest: () => {
      lastActivity = Date.now();
    },
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve({ fetch: api.fetch, hostname: host, port }, () => resolve(started));
    started.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new UserError(
              'usage',
              `Port ${port} on ${host} is in use: another server runs there? Give --port.`,
            )
          : error,
      ),
    );
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address !== null ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  const info: ServeInfo = { url: `http://${shown}:${actualPort}`, token, pid: process.pid };
  // A pure node writes nothing in its working directory: `wait`, `logs` and `run --detach` find a server
  // through a repository's serve.json, and this directory is none.
  const serveFile = repository.pure ? null : await writeServeFile(repository.root, info);
  await fleet?.start(info.url);
  return {
    info,
    repoRoot: repository.root,
    pure: repository.pure !== undefined,
    idleFor: () => (board.hasLive() ? 0 : Date.now() - lastActivity),
    close: async () => {
      await Promise.all([board.stopAll(), fleet?.stop()]);
      // Clients that keep a connection open (a page's event stream) do not hold the exit.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if ('closeAllConnections' in server) server.closeAllConnections();
      await closed;
      if (serveFile !== null) await rm(serveFile, { force: true });
    },
  };
}

export async function serveCommand(options: ServeOptions, context: CommandContext): Promise<void> {
  const { output } = context;
  const host = options.host ?? '127.0.0.1';
  if (!LOOPBACK.has(host))
    output.err(
      `agent-runner serve: warning: listening on ${host}, reachable from other machines; the token is still ` +
        'required, but it travels in clear text (plain HTTP): put the server behind TLS or an SSH tunnel.',
    );
  const idleExitMs = options.idleExit === undefined ? null : (parseDuration(options.idleExit) ?? null);
  if (idleExitMs === null && options.idleExit !== undefined)
    throw new UserError('usage', `--idle-exit ${options.idleExit}: give a duration like 10m.`);
  const server = await startServer(options, context);
  output.err(
    server.pure
      ? `agent-runner serve: ${server.repoRoot} is no repository: this node runs the fleet's tasks only`
      : `agent-runner serve: ${server.repoRoot}`,
  );
  output.out(`${server.info.url}/?token=${server.info.token}`);
  output.err(
    `Token (an admin; every request needs it or a named one, as Authorization: Bearer <token>): ${server.info.token}`,
  );
  output.err(
    'Named tokens for a team: agent-runner token create --name NAME --role viewer|operator|admin (in this ' +
      'repository; with --control URL for a fleet); who changed what: agent-runner audit.',
  );
  output.err('Ctrl-C stops the server and every task it runs (their work saved, their notes written).');
  await new Promise<void>((resolve) => {
    let stopping = false;
    let idleTimer: NodeJS.Timeout | undefined;
    const stop = (reason: string) => {
      if (stopping) return;
      stopping = true;
      clearInterval(idleTimer);
      output.err(`agent-runner serve: ${reason}: stopping the tasks it runs, saving their work`);
      void server.close().then(resolve, resolve);
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
    if (idleExitMs !== null)
      idleTimer = setInterval(
        () => {
          if (server.idleFor() >= idleExitMs) stop(`idle for ${options.idleExit}`);
        },
        Math.min(30_000, Math.max(1_000, idleExitMs / 4)),
      );
  });
}

/** One server's named tokens and audit log: files of the repository's state directory (a pure node has none). */
async function localIdentity(repoRoot: string) {
  const [{ FileTokenStore }, { FileAuditLog }] = await Promise.all([
    import('../identity/file-token-store.js'),
    import('../identity/file-audit-log.js'),
  ]);
  const stateDir = path.join(repoRoot, '.agent-runner');
  return { tokens: new FileTokenStore(stateDir), audit: new FileAuditLog(stateDir) };
}

/** `.agent-runner/serve.json`: where `run --detach`, `wait`, `logs` and `answer` find the server. */
async function writeServeFile(repoRoot: string, info: ServeInfo): Promise<string> {
  const serveFile = path.join(repoRoot, '.agent-runner', SERVE_FILE);
  await mkdir(path.dirname(serveFile), { recursive: true });
  await writeFile(serveFile, `${JSON.stringify(info)}\n`, { mode: 0o600 });
  return serveFile;
}

/**
 * The working directory's repository; outside any git repository, a pure node if a control database is given
 * (the caller checks, and else throws `pure`: the error a plain `serve` there gives). A pure node runs the
 * fleet's tasks only, each on its `--repo` cache; its settings come from the environment and that directory's
 * agent-runner.yaml (`parallel.max`, `control.url`).
 */
async function localRepository(context: CommandContext): Promise<{ root: string; pure?: UserError }> {
  // Not in any repository (a bare one, a linked worktree or one without commits is a mistake to fix: inspected).
  if ((await tryGit(['rev-parse', '--git-dir'], { cwd: context.cwd })).exitCode === 0)
    return inspectRepository(context.cwd);
  const pure = await inspectRepository(context.cwd).then(
    () => null,
    (error: unknown) => error,
  );
  if (!(pure instanceof UserError)) throw pure ?? new Error(`${context.cwd}: git says no repository`);
  return { root: path.resolve(context.cwd), pure };
}

/** `serve --repo`: the remote fetched into its cache (its credentials hidden from every answer); tasks start at its HEAD. */
async function fetchedCache(url: string, context: CommandContext): Promise<{ root: string }> {
  const { prepareRepositoryCache } = await import('../remote/repository-cache.js');
  const cached = await prepareRepositoryCache({ url, env: context.env });
  context.redaction.add(cached.secrets);
  context.output.err(`agent-runner: ${cached.how} ${cached.url} (${cached.baseBranch}) in ${cached.root}`);
  return { root: cached.root };
}

export function registerServeCommand(program: Command, context: CommandContext): void {
  program
    .command('serve')
    .description('Serve the HTTP API and the web view for this repository, and run the tasks started there.')
    .option(
      '--host <address>',
      'address to listen on (default 127.0.0.1; another one is reachable from outside)',
    )
    .option('--port <n>', `port (default ${DEFAULT_SERVE_PORT}; 0: any free one)`)
    .option(
      '--model-script <file>',
      'a scripted model for every task that names none (the demo, no key needed)',
    )
    .option('--idle-exit <duration>', 'exit after this long with no task running and no request (e.g. 10m)')
    .option(
      '--repo <url>',
      'serve a remote repository (its cached clone, fetched at start) instead of this one',
    )
    .option(
      '--control <url>',
      'be a node of the fleet whose queue is this PostgreSQL (postgres://…; else control.url, AGENT_RUNNER_CONTROL_URL)',
    )
    .action(async (options: ServeOptions) => {
      await serveCommand(options, context);
    });
}
