/**
 * `verify` of a pull request (GitHub) or merge request (GitLab) named by its page's URL: the request is read
 * through the forge's API (the clients delivery uses) and its own head ref is fetched and checked against the
 * commit the API names, so what runs is exactly what the request proposes, a fork's request included.
 */
import type { ForgeFactory } from '../deliver/deliver-task.js';
import { ForgeError } from '../deliver/forge-error.js';
import type { ChangeRequest } from '../deliver/forge-port.js';
import { EnvironmentError, UserError } from '../errors.js';
import { forgeToken } from '../remote/remote-credentials.js';
import { parseRemoteUrl, type ForgeKind } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';
import { EVIDENCE_NOTES_REF, fetchedNotesRef } from './evidence-note.js';
import { fetchFrom, fetchNotes, headOf } from './remote-fetch.js';
import type { VerifyTarget } from './verify-target.js';

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
  return parseForgePageUrl(argument, 'request');
}

/** The page segments of each kind: GitHub's `/pull/N` and `/issues/N`, GitLab's `/-/merge_requests/N` and `/-/issues/N`. */
const PAGE_SEGMENTS = {
  request: { github: 'pull', gitlab: 'merge_requests' },
  issue: { github: 'issues', gitlab: 'issues' },
} as const;

/** A request's or an issue's page URL as forge, host, repository and number; null when it is none. */
export function parseForgePageUrl(
  argument: string,
  kind: keyof typeof PAGE_SEGMENTS,
): ChangeRequestUrl | null {
  let url: URL;
  try {
    url = new URL(argument);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  const path = decodeURIComponent(url.pathname).replace(/\/+$/, '');
  const segments = PAGE_SEGMENTS[kind];
  const github = new RegExp(`^/([^/]+/[^/]+)/${segments.github}/(\\d+)$`).exec(path);
  const gitlab = new RegExp(`^/(.+?)/-/${segments.gitlab}/(\\d+)$`).exec(path);
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

/**
 * A pull/merge request: exactly the commit it proposes. The forge's API names the request's head commit
 * (`head.sha`, `sha`); the forge keeps that commit under a ref of the base repository (GitHub
 * `refs/pull/N/head`, GitLab `refs/merge-requests/N/head`), a request from a fork included. That ref is
 * fetched from the remote of this repository that points at the request's repository (else `deliver.remote`,
 * default origin, with a notice) into `refs/remotes/<remote>/pull/N/head` (`.../merge-requests/N/head`), and
 * verified only when it is the commit the API names. The request's branch name is never looked up: a fork's
 * branch may share its name with a branch of the base repository that holds other code.
 */
export async function changeRequestTarget(
  repoRoot: string,
  request: ChangeRequestUrl,
  env: NodeJS.ProcessEnv,
  access: ChangeRequestAccess,
): Promise<VerifyTarget> {
  const proposed = await readChangeRequest(request, env, access);
  const notices: string[] = [];
  const remoteName = await remoteFor(repoRoot, request.repository, access.remote ?? 'origin', notices);
  const headRef =
    request.forge === 'github' ? `pull/${request.number}/head` : `merge-requests/${request.number}/head`;
  const name = `${remoteName}/${headRef}`;
  const ref = `refs/remotes/${name}`;
  const what = `${request.forge === 'github' ? 'pull request' : 'merge request'} ${request.number} of ${request.repository}`;
  const fetched: string[] = [];
  if (!(await fetchFrom(repoRoot, remoteName, [`+refs/${headRef}:${ref}`], env, fetched, access.forge)))
    throw new EnvironmentError(
      'remote_failed',
      `Could not fetch refs/${headRef} of ${what} from ${remoteName} (${fetched.join('; ')}). Check that ${remoteName} is the request's repository and reachable, then run verify again.`,
    );
  const headSha = await headOf(repoRoot, ref);
  if (proposed.headSha === null || proposed.headSha !== headSha)
    throw new EnvironmentError(
      'remote_failed',
      `The head of ${what} is not the commit ${remoteName}'s refs/${headRef} holds (${request.forge} says ${proposed.headSha ?? 'nothing'}, the remote has ${headSha}): nothing is verified. It may have moved meanwhile: run verify again.`,
    );
  const notesRefs = [EVIDENCE_NOTES_REF];
  if (await fetchNotes(repoRoot, remoteName, env, notices, access.forge))
    notesRefs.unshift(fetchedNotesRef(remoteName));
  return { branch: name, ref, headSha, notesRefs, remote: remoteName, notices };
}

/** The request as the forge's API describes it; a failure in words with its fix. */
export async function readChangeRequest(
  request: ChangeRequestUrl,
  env: NodeJS.ProcessEnv,
  access: ChangeRequestAccess,
): Promise<ChangeRequest> {
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
  try {
    return await client.get(request.number);
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
