/**
 * What `verify` was given, resolved to a branch and its head: a task ID (this repository's run data, or its
 * `agent-runner/<ID>` branch), a local branch, or a remote-tracking branch (`origin/x`). A branch that comes
 * from a remote brings that remote's evidence notes with it: they are fetched (host git) into a ref of their
 * own, so the person's local notes are never overwritten. A pull request (GitHub) or merge request (GitLab)
 * URL is read through the forge's API (the same clients delivery uses): its source branch is fetched from the
 * remote of this repository that points at the request's repository, and verified as a remote branch.
 */
import { existsSync } from 'node:fs';
import { UserError } from '../errors.js';
import { isValidTaskId } from '../core/task-id.js';
import { EnvironmentError } from '../errors.js';
import type { ForgeFactory } from '../deliver/deliver-task.js';
import { ForgeError } from '../deliver/forge-error.js';
import { forgeToken, remoteCredential } from '../remote/remote-credentials.js';
import { parseRemoteUrl, type ForgeKind } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import { EVIDENCE_NOTES_REF, fetchedNotesRef } from './evidence-note.js';

/** How long fetching a branch or the notes from a remote may take. */
const FETCH_TIMEOUT_MS = 120_000;

/** A pull request (GitHub) or merge request (GitLab) named by its page's URL. */
export interface ChangeRequestUrl {
  forge: ForgeKind;
  /** `https://host` of the page. */
  origin: string;
  host: string;
  /** The repository's path on the forge (`owner/name`, `group/sub/name`). */
  repository: string;
  number: number;
}

/** Reads `https://HOST/OWNER/NAME/pull/N` (GitHub) and `https://HOST/GROUP/NAME/-/merge_requests/N` (GitLab). */
export function parseChangeRequestUrl(argument: string): ChangeRequestUrl | null {
  let url: URL;
  try {
    url = new URL(argument);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const path = decodeURIComponent(url.pathname).replace(/\/+$/, '');
  const github = /^\/([^/]+\/[^/]+)\/pull\/(\d+)$/.exec(path);
  const gitlab = /^\/(.+?)\/-\/merge_requests\/(\d+)$/.exec(path);
  const found = github ?? gitlab;
  if (!found) return null;
  return {
    forge: github ? 'github' : 'gitlab',
    origin: url.origin,
    host: url.hostname.toLowerCase(),
    repository: found[1] as string,
    number: Number(found[2]),
  };
}

/** The API a request's page is served by: `deliver.apiUrl` when set, else the forge's own address for that host. */
export function changeRequestApiUrl(request: ChangeRequestUrl, apiUrl?: string): string {
  if (apiUrl) return apiUrl;
  if (request.forge === 'gitlab') return request.origin;
  return request.host === 'github.com' ? 'https://api.github.com' : `${request.origin}/api/v3`;
}

/** What reading a pull/merge request needs beyond the repository: `deliver.*`, and a test's forge client. */
export interface ChangeRequestAccess {
  apiUrl?: string;
  /** The remote to fetch from when none points at the request's repository (`deliver.remote`). */
  remote?: string;
  /** `deliver.forge` when it names one: the forge whose token host git sends to the remote. */
  forge?: ForgeKind;
  forgeFactory?: ForgeFactory;
}

export interface VerifyTarget {
  /** The branch as the person names it (`agent-runner/T1`, `origin/agent-runner/T1`). */
  branch: string;
  /** Its full ref. */
  ref: string;
  /** The commit it points at now. */
  headSha: string;
  /** The notes refs to read the evidence from, first found wins (a remote's fetched notes first). */
  notesRefs: string[];
  /** The remote the notes were fetched from (null: local notes only). */
  remote: string | null;
  /** What went wrong on the way that the person should know (a fetch that failed). */
  notices: string[];
}

/** A URL that is no pull/merge request page is refused before anything is read. */
export function refuseOtherUrl(argument: string): void {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(argument) && parseChangeRequestUrl(argument) === null)
    throw new UserError(
      'usage',
      `\`${argument}\` is no pull request (https://HOST/OWNER/NAME/pull/N) or merge request (https://HOST/GROUP/NAME/-/merge_requests/N) URL. Pass one of those, a task ID or a branch.`,
    );
}

/** Resolves `argument` in `repoRoot`; a name that is none of the accepted forms is a usage error. */
export async function resolveVerifyTarget(
  repoRoot: string,
  argument: string,
  env: NodeJS.ProcessEnv,
  access: ChangeRequestAccess = {},
): Promise<VerifyTarget> {
  refuseOtherUrl(argument);
  const request = parseChangeRequestUrl(argument);
  if (request) return changeRequestBranch(repoRoot, request, env, access);
  if (argument.startsWith('-') || argument.includes('..') || argument.trim() === '')
    throw new UserError('usage', `\`${argument}\` is no branch or task ID.`);
  const notices: string[] = [];
  // A task ID of this repository (its run data) names its task branch.
  if (isValidTaskId(argument) && existsSync(taskLayout(repoRoot, argument).runDir)) {
    const ref = `refs/heads/agent-runner/${argument}`;
    if (await refExists(repoRoot, ref)) return local(repoRoot, ref, env, notices, access.forge);
  }
  if (await refExists(repoRoot, `refs/heads/${argument}`))
    return local(repoRoot, `refs/heads/${argument}`, env, notices, access.forge);
  if (await refExists(repoRoot, `refs/remotes/${argument}`))
    return remote(repoRoot, argument, env, notices, access.forge);
  if (isValidTaskId(argument) && (await refExists(repoRoot, `refs/heads/agent-runner/${argument}`)))
    return local(repoRoot, `refs/heads/agent-runner/${argument}`, env, notices, access.forge);
  throw new UserError(
    'usage',
    `No task, branch or remote branch named \`${argument}\` in ${repoRoot}. Pass a task ID, a local branch, or a remote branch (\`git fetch origin\` first, then \`agent-runner verify origin/<branch>\`).`,
  );
}

/**
 * A pull/merge request: its source branch, asked of the forge, fetched from the remote of this repository that
 * points at the request's repository (else `deliver.remote`, default origin, with a notice), then verified as
 * that remote's branch. A request from a fork names a branch of another repository: not followed.
 */
async function changeRequestBranch(
  repoRoot: string,
  request: ChangeRequestUrl,
  env: NodeJS.ProcessEnv,
  access: ChangeRequestAccess,
): Promise<VerifyTarget> {
  const token = forgeToken(request.forge, env)?.token ?? '';
  if (request.forge === 'gitlab' && token === '')
    throw new UserError(
      'usage',
      'Reading a GitLab merge request needs GITLAB_TOKEN (the `read_api` scope is enough).',
    );
  // Loaded only here: the forges' clients are large, and no other verify needs them.
  const forgeFactory =
    access.forgeFactory ?? (await import('../deliver/deliver-task.js')).defaultForgeFactory;
  const client = forgeFactory({
    forge: request.forge,
    repository: request.repository,
    token,
    apiUrl: changeRequestApiUrl(request, access.apiUrl),
  });
  let head: string;
  try {
    head = (await client.get(request.number)).head;
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    const { kind, status, message } = error.failure;
    const said = `${request.forge} answered ${status ?? 'nothing'}: ${message}`;
    if (kind === 'unreachable' || kind === 'unavailable' || kind === 'rate_limited')
      throw new EnvironmentError(
        'remote_failed',
        `Could not read request ${request.number} of ${request.repository} (${said}). Try again later.`,
      );
    throw new UserError(
      'usage',
      `Could not read request ${request.number} of ${request.repository} (${said}). Check the URL${request.forge === 'github' ? ' and GH_TOKEN / GITHUB_TOKEN for a private repository' : ' and GITLAB_TOKEN'}.`,
    );
  }
  const notices: string[] = [];
  const remoteName = await remoteFor(repoRoot, request.repository, access.remote ?? 'origin', notices);
  return remote(repoRoot, `${remoteName}/${head}`, env, notices, access.forge);
}

/** The remote of `repoRoot` whose URL names `repository`, else `fallback` (when it exists) with a notice. */
async function remoteFor(
  repoRoot: string,
  repository: string,
  fallback: string,
  notices: string[],
): Promise<string> {
  const names = (await tryGit(['remote'], { cwd: repoRoot })).stdout.split('\n').filter(Boolean);
  for (const name of names) {
    const url = (await tryGit(['remote', 'get-url', name], { cwd: repoRoot })).stdout.trim();
    // The same path, or one that ends with it (a file:// remote, a forge served under a prefix).
    const path = parseRemoteUrl(url)?.path.toLowerCase() ?? '';
    const wanted = repository.toLowerCase();
    if (path === wanted || path.endsWith(`/${wanted}`)) return name;
  }
  if (!names.includes(fallback))
    throw new UserError(
      'usage',
      `No remote of ${repoRoot} points at ${repository}. Add it (\`git remote add origin <its URL>\`) and run verify again.`,
    );
  notices.push(`no remote points at ${repository}: its branch is fetched from ${fallback}`);
  return fallback;
}

/** A local branch: the local notes, and its upstream's notes fetched first when it has one. */
async function local(
  repoRoot: string,
  ref: string,
  env: NodeJS.ProcessEnv,
  notices: string[],
  forge?: ForgeKind,
): Promise<VerifyTarget> {
  const upstream = (
    await tryGit(['for-each-ref', '--format=%(upstream:remotename)', ref], { cwd: repoRoot })
  ).stdout.trim();
  const remoteName = upstream !== '' && upstream !== '.' ? upstream : null;
  const notesRefs = [EVIDENCE_NOTES_REF];
  if (remoteName && (await fetchNotes(repoRoot, remoteName, env, notices, forge)))
    notesRefs.unshift(fetchedNotesRef(remoteName));
  return {
    branch: ref.slice('refs/heads/'.length),
    ref,
    headSha: await headOf(repoRoot, ref),
    notesRefs,
    remote: remoteName,
    notices,
  };
}

/** A remote-tracking branch: the branch and the remote's notes fetched again, then the local notes. */
async function remote(
  repoRoot: string,
  name: string,
  env: NodeJS.ProcessEnv,
  notices: string[],
  forge?: ForgeKind,
): Promise<VerifyTarget> {
  const remotes = (await tryGit(['remote'], { cwd: repoRoot })).stdout.split('\n').filter(Boolean);
  // The longest remote name the branch starts with (a remote's name may hold a slash).
  const remoteName = remotes
    .filter((candidate) => name.startsWith(`${candidate}/`))
    .sort((a, b) => b.length - a.length)[0];
  const ref = `refs/remotes/${name}`;
  const notesRefs = [EVIDENCE_NOTES_REF];
  if (remoteName) {
    const branch = name.slice(remoteName.length + 1);
    await fetchFrom(repoRoot, remoteName, [`+refs/heads/${branch}:${ref}`], env, notices, forge);
    if (await fetchNotes(repoRoot, remoteName, env, notices, forge))
      notesRefs.unshift(fetchedNotesRef(remoteName));
  }
  return {
    branch: name,
    ref,
    headSha: await headOf(repoRoot, ref),
    notesRefs,
    remote: remoteName ?? null,
    notices,
  };
}

async function fetchNotes(
  repoRoot: string,
  remoteName: string,
  env: NodeJS.ProcessEnv,
  notices: string[],
  forge?: ForgeKind,
): Promise<boolean> {
  return fetchFrom(
    repoRoot,
    remoteName,
    [`+${EVIDENCE_NOTES_REF}:${fetchedNotesRef(remoteName)}`],
    env,
    notices,
    forge,
  );
}

/** Fetches `refspecs` from the remote with its credential (host git only); false, with a notice, on failure. */
async function fetchFrom(
  repoRoot: string,
  remoteName: string,
  refspecs: string[],
  env: NodeJS.ProcessEnv,
  notices: string[],
  forge?: ForgeKind,
): Promise<boolean> {
  const url = (await tryGit(['remote', 'get-url', remoteName], { cwd: repoRoot })).stdout.trim();
  const parsed = url ? parseRemoteUrl(url) : null;
  const credential = parsed ? remoteCredential(parsed, env, forge ?? null) : null;
  const result = await tryGit(['fetch', '--no-tags', '--quiet', remoteName, ...refspecs], {
    cwd: repoRoot,
    timeoutMs: FETCH_TIMEOUT_MS,
    ...(credential ? { config: credential.gitConfig } : {}),
  }).catch((error: unknown) => ({ exitCode: 1, stdout: '', stderr: (error as Error).message }));
  if (result.exitCode === 0) return true;
  const why = result.stderr.trim().split('\n').at(-1) ?? `exit ${result.exitCode}`;
  notices.push(`could not fetch ${refspecs.join(' ')} from ${remoteName}: ${why}`);
  return false;
}

async function refExists(repoRoot: string, ref: string): Promise<boolean> {
  return (await tryGit(['show-ref', '--verify', '--quiet', ref], { cwd: repoRoot })).exitCode === 0;
}

async function headOf(repoRoot: string, ref: string): Promise<string> {
  const result = await tryGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: repoRoot });
  if (result.exitCode !== 0) throw new UserError('usage', `${ref} does not point at a commit.`);
  return result.stdout.trim();
}
