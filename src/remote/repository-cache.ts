/**
 * `run --repo URL`: one cached clone per remote repository under the state directory
 * (`$XDG_STATE_HOME/agent-runner/repos/<slug>-<hash>/`), fetched (never cloned again) for every later task.
 * The clone is an ordinary repository whose main tree is checked out, detached, at the task's base: from there
 * a `--repo` task runs exactly as a local one (its config file, its toolchain files, its `.agent-runner/` with
 * worktrees, run data and notes), so nothing downstream knows the difference.
 *
 * Full clone, not partial or shallow (measured in docs/benchmarks.md, decided here): the sandbox repository
 * borrows the cache's objects through `alternates`, and git in the sandbox has neither network nor
 * credentials, so a blob missing from a partial clone (`--filter=blob:none`) could never be fetched lazily
 * there; on the host only the fetch below carries the credential, so a lazy fetch during the facts (a diff, a
 * merge-base, the baseline) would fail mid-task. A shallow clone breaks `merge-base` between the base and a task
 * branch made on an older base (resume after a fetch). And it is not faster here: with the base checked out, a
 * partial clone of this project took 793 ms against 500 ms for a full one (it fetches the tree's blobs after).
 *
 * Credentials stay on the host: a forge token goes to git as an environment-passed header
 * ({@link remoteCredential}), and so does a URL's own `user:token@`; neither is in argv or stored (`origin` is
 * the credential-free URL, FETCH_HEAD is not written). Otherwise git's credential helper answers.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { userStateFile } from '../config/user-state.js';
import { EnvironmentError, UserError } from '../errors.js';
import { STATE_DIR_NAME, wipRef } from '../workspace/layout.js';
import { taskStateRef } from './remote-task-state.js';
import { EVIDENCE_NOTES_REF } from '../verify/evidence-note.js';
import { tryGit, type GitCommandResult } from '../workspace/git/git-command.js';
import { writeJsonAtomic } from '../workspace/workspace-state.js';
import { basicAuthConfig, remoteCredential } from './remote-credentials.js';
import { displayUrl, parseRemoteUrl, urlCredentials, type ForgeKind, type RemoteUrl } from './remote-url.js';

/** The file in a cached repository's `.agent-runner/` that names its remote (credential-free). */
export const REMOTE_FILE = 'remote.json';

/** A remote repository made ready for a task. */
export interface CachedRepository {
  /** The credential-free URL: what is shown, journaled and written in notes. */
  url: string;
  /** The cached clone: the task's repository root. */
  root: string;
  /** The branch the task starts from (`--base`, else the remote's default branch). */
  baseBranch: string;
  baseSha: string;
  /** `cloned` the first time, `fetched` after. */
  how: 'cloned' | 'fetched';
  /** Every credential value seen (URL password, forge token): the caller adds them to the task's redaction. */
  secrets: string[];
}

/** The state directory's folder of cached repositories. */
export function cacheRoot(env: NodeJS.ProcessEnv): string {
  return userStateFile(env, 'repos');
}

/** A readable, path-safe name for a remote: its path's last two parts plus a hash of the credential-free URL. */
export function cacheName(remote: RemoteUrl): string {
  const url = displayUrl(remote.raw)
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
  const hash = createHash('sha256').update(url).digest('hex').slice(0, 10);
  const slug = remote.path
    .split('/')
    .slice(-2)
    .join('-')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 60);
  return `${slug || 'repo'}-${hash}`;
}

/** Parses `--repo`, or refuses it with the fix. */
export function parseRepoOption(raw: string): RemoteUrl {
  const remote = parseRemoteUrl(raw);
  if (remote === null) {
    throw new UserError(
      'remote_failed',
      `--repo ${JSON.stringify(displayUrl(raw))} is not a git remote URL. Give one git can clone, e.g. https://github.com/owner/name.git, git@host:owner/name.git or file:///path/to/repo.git.`,
    );
  }
  return remote;
}

/** The cached clone of `raw` (which may not exist yet). */
export function cacheDirectory(env: NodeJS.ProcessEnv, raw: string): string {
  return path.join(cacheRoot(env), cacheName(parseRepoOption(raw)));
}

/** The credential-free URL a cached repository was made from, or null when `repoRoot` is not a cache. */
export async function readCachedRemote(repoRoot: string): Promise<string | null> {
  try {
    const parsed = JSON.parse(await readFile(path.join(repoRoot, STATE_DIR_NAME, REMOTE_FILE), 'utf8')) as {
      url?: unknown;
    };
    return typeof parsed.url === 'string' ? parsed.url : null;
  } catch {
    return null;
  }
}

/** Every cached repository: its root and its URL. */
export async function listCachedRepositories(
  env: NodeJS.ProcessEnv,
): Promise<{ root: string; url: string }[]> {
  const root = cacheRoot(env);
  const names = await readdir(root).catch(() => [] as string[]);
  const found: { root: string; url: string }[] = [];
  for (const name of names.sort()) {
    const dir = path.join(root, name);
    const url = await readCachedRemote(dir);
    if (url !== null) found.push({ root: dir, url });
  }
  return found;
}

/** The existing cache of `raw`, or a UserError saying no task ran on it here yet. */
export async function existingCache(env: NodeJS.ProcessEnv, raw: string): Promise<string> {
  const dir = cacheDirectory(env, raw);
  if ((await readCachedRemote(dir)) === null) {
    throw new UserError(
      'remote_failed',
      `No task has run on ${displayUrl(raw)} on this machine (no cache at ${dir}). Start one with \`agent-runner run --repo ${displayUrl(raw)} --prd FILE\`.`,
    );
  }
  return dir;
}

/** How long a task waits for another task's fetch of the same repository. */
const LOCK_WAIT_RETRIES = 300;

export interface PrepareRepositoryCacheOptions {
  url: string;
  /** `--base`: a branch of the remote; default its HEAD. */
  base?: string;
  env: NodeJS.ProcessEnv;
  /**
   * The forge when the host does not say (a self-hosted GitLab, GitHub Enterprise): `--forge` or
   * `AGENT_RUNNER_FORGE`, known before the clone, so its token answers the clone too.
   */
  forge?: ForgeKind | null;
  signal?: AbortSignal;
  /** A task id whose WIP ref is fetched too (a fleet node resuming a task another node ran). */
  taskRefs?: string;
}

/**
 * Clones (first task) or fetches (every later one) the remote into its cache and checks the base out in the
 * cache's main tree. Serialised per repository by a `proper-lockfile` lock (`<cache>.lock`, a directory made
 * atomically, refreshed while held, taken over when stale), so concurrent tasks on one URL never fetch or check
 * out at once; git's own ref locks would fail the second fetch instead of making it wait.
 */
export async function prepareRepositoryCache(
  options: PrepareRepositoryCacheOptions,
): Promise<CachedRepository> {
  const remote = parseRepoOption(options.url);
  const url = displayUrl(remote.raw);
  const root = path.join(cacheRoot(options.env), cacheName(remote));
  const { fetchUrl, gitConfig, secrets } = networkAccess(remote, options.env, options.forge ?? null);
  const network = {
    config: gitConfig,
    // git's credential helper and its config are found where the task's environment says (HOME, XDG).
    env: Object.fromEntries(
      (['HOME', 'XDG_CONFIG_HOME'] as const).flatMap((name) =>
        options.env[name] ? [[name, options.env[name] as string]] : [],
      ),
    ),
    ...(options.signal ? { signal: options.signal } : {}),
  };
  await mkdir(path.dirname(root), { recursive: true });
  const release = await lockfile.lock(root, {
    realpath: false,
    lockfilePath: `${root}.lock`,
    stale: 30_000,
    retries: { retries: LOCK_WAIT_RETRIES, minTimeout: 100, maxTimeout: 1_000 },
    // A lock whose refresh came too late (a machine under load) is not worth crashing the task over: at worst
    // another task's fetch runs beside this one, and git's own ref locks fail one of them with its message.
    onCompromised: () => undefined,
  });
  try {
    const fresh = (await readCachedRemote(root)) === null;
    if (fresh) {
      await rm(root, { recursive: true, force: true });
      await mkdir(root, { recursive: true });
      await must(['init', '-q'], root, url, secrets);
      await must(['remote', 'add', 'origin', fetchUrl], root, url, secrets);
    }
    try {
      const head = await networkGit(['ls-remote', '--symref', fetchUrl, 'HEAD'], root, network, url, secrets);
      const defaultBranch = /^ref: refs\/heads\/(\S+)\s+HEAD$/m.exec(head)?.[1] ?? null;
      await networkGit(
        [
          ...FETCH,
          fetchUrl,
          '+refs/heads/*:refs/remotes/origin/*',
          ...wipRefspec(options.taskRefs),
          ...(await notesRefspec(root, options.taskRefs)),
        ],
        root,
        network,
        url,
        secrets,
      );
      const baseBranch = options.base ?? defaultBranch;
      const baseSha = await baseCommit(root, url, baseBranch, secrets);
      // The main tree is the cache's own: forced to the base so the task reads the base's config and toolchain.
      await must(
        ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--force', '--detach', baseSha],
        root,
        url,
        secrets,
      );
      if (fresh) await writeJsonAtomic(path.join(root, STATE_DIR_NAME, REMOTE_FILE), { version: 1, url });
      return {
        url,
        root,
        baseBranch: baseBranch as string,
        baseSha,
        how: fresh ? 'cloned' : 'fetched',
        secrets,
      };
    } catch (error) {
      // A first clone that failed leaves nothing; a cache that was there stays as it was.
      if (fresh) await rm(root, { recursive: true, force: true });
      throw error;
    }
  } finally {
    await release().catch(() => undefined);
  }
}

/**
 * The fetch of a task's WIP ref and its state (src/remote/remote-task-state.ts) as the remote holds them (a task
 * resumed from another node, a follow-up from the remote alone; its branch comes with heads/*). Pattern
 * refspecs: a ref the remote does not have is no error.
 */
const FETCH = ['fetch', '--quiet', '--prune', '--no-tags', '--no-write-fetch-head'];

function wipRefspec(taskId: string | undefined): string[] {
  if (taskId === undefined) return [];
  const wip = wipRef(taskId);
  const state = taskStateRef(taskId);
  return [`+${wip}*:${wip}*`, `+${state}*:${state}*`];
}

/**
 * The remote's evidence notes, when a task's refs are fetched and this clone has no notes of its own yet: a
 * task continued here adds its note to them, and pushes them back as a fast-forward.
 */
async function notesRefspec(root: string, taskId: string | undefined): Promise<string[]> {
  if (taskId === undefined) return [];
  const local = await tryGit(['show-ref', '--verify', '--quiet', EVIDENCE_NOTES_REF], { cwd: root });
  return local.exitCode === 0 ? [] : [`+${EVIDENCE_NOTES_REF}*:${EVIDENCE_NOTES_REF}*`];
}

/**
 * The git config that carries a remote's credential for host git (a fleet node's push): the URL's own, else the
 * forge token of the forge the host names or `forge` names (as {@link prepareRepositoryCache} fetches).
 */
export function remoteNetworkAccess(
  raw: string,
  env: NodeJS.ProcessEnv,
  forge: ForgeKind | null = null,
): { gitConfig: Record<string, string> } {
  return { gitConfig: networkAccess(parseRepoOption(raw), env, forge).gitConfig };
}

/**
 * How host git reaches the remote without a secret in argv (other users can read it) or in a stored URL: a
 * URL's own `user:password@` becomes an Authorization header scoped to the credential-free URL, through the
 * environment like a forge token's ({@link remoteCredential}); an ssh URL keeps its user name (not a secret).
 */
function networkAccess(
  remote: RemoteUrl,
  env: NodeJS.ProcessEnv,
  forge: ForgeKind | null,
): { fetchUrl: string; gitConfig: Record<string, string>; secrets: string[] } {
  const inUrl = urlCredentials(remote.raw);
  if (inUrl !== null && (remote.scheme === 'http' || remote.scheme === 'https')) {
    const fetchUrl = displayUrl(remote.raw);
    const { gitConfig, encoded } = basicAuthConfig(fetchUrl, inUrl.user, inUrl.password);
    return { fetchUrl, gitConfig, secrets: [inUrl.password, encoded] };
  }
  const credential = remoteCredential(remote, env, forge);
  return {
    fetchUrl: remote.raw,
    gitConfig: credential?.gitConfig ?? {},
    secrets: [inUrl?.password, credential?.token].filter((value): value is string => Boolean(value)),
  };
}

function hide(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('[REDACTED]');
  return out;
}

function firstLines(result: GitCommandResult, secrets: readonly string[]): string {
  return hide(
    result.stderr
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .slice(0, 3)
      .join(' / '),
    secrets,
  );
}

async function must(args: string[], cwd: string, url: string, secrets: string[]): Promise<string> {
  const result = await tryGit(args, { cwd });
  if (result.exitCode !== 0) {
    throw new EnvironmentError(
      'remote_failed',
      `git ${args[0]} failed in the cache of ${url} (${cwd}): ${firstLines(result, secrets)}. Remove that directory and run again.`,
    );
  }
  return result.stdout;
}

const AUTH_REFUSED =
  /Authentication failed|could not read (Username|Password)|terminal prompts disabled|HTTP (401|403)|Permission denied \(publickey|returned error: 40[13]/i;

/** A call that reaches the remote: a refusal or an unreachable remote becomes its own message. */
async function networkGit(
  args: string[],
  cwd: string,
  options: { config: Record<string, string>; env: Record<string, string>; signal?: AbortSignal },
  url: string,
  secrets: string[],
): Promise<string> {
  const result = await tryGit(args, { cwd, ...options });
  if (result.exitCode === 0) return result.stdout;
  const said = firstLines(result, secrets);
  if (AUTH_REFUSED.test(result.stderr)) {
    throw new UserError(
      'remote_failed',
      `${url} refused the credentials (${said}). For GitHub set GH_TOKEN or GITHUB_TOKEN, for GitLab GITLAB_TOKEN; otherwise store a credential git's helper gives (\`git credential approve\`, or \`gh auth setup-git\`) and check it with \`git ls-remote ${url}\`.`,
      { details: { url } },
    );
  }
  throw new EnvironmentError(
    'remote_failed',
    `Could not reach ${url} (${said}). Check the URL and the network with \`git ls-remote ${url}\`, then run again.`,
    { details: { url }, retryable: true },
  );
}

/** The base branch's commit after the fetch, or the message naming the branches there are. */
async function baseCommit(
  root: string,
  url: string,
  branch: string | null,
  secrets: string[],
): Promise<string> {
  const branches = (
    await must(['for-each-ref', '--format=%(refname:lstrip=3)', 'refs/remotes/origin/'], root, url, secrets)
  )
    .split('\n')
    .filter((name) => name !== '' && name !== 'HEAD');
  if (branch === null) {
    throw new UserError(
      'remote_failed',
      `${url} names no default branch (an empty repository, or a server that does not say). Give one with --base BRANCH${branches.length ? ` (its branches: ${branches.slice(0, 10).join(', ')})` : ''}.`,
    );
  }
  const sha = await tryGit(['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${branch}^{commit}`], {
    cwd: root,
  });
  if (sha.exitCode !== 0) {
    throw new UserError(
      'remote_failed',
      `--base ${branch} is not a branch of ${url}. ${branches.length ? `Its branches: ${branches.slice(0, 10).join(', ')}${branches.length > 10 ? ', ...' : ''}.` : 'It has no branches.'} Give one of them with --base, or omit --base for its default branch.`,
    );
  }
  return sha.stdout.trim();
}

/** Whether `dir` holds a cached repository (its `.agent-runner/remote.json`). */
export function isCachedRepository(dir: string): boolean {
  return existsSync(path.join(dir, STATE_DIR_NAME, REMOTE_FILE));
}
