/**
 * What `verify` was given, resolved to a branch and its head: a task ID (this repository's run data, or its
 * `agent-runner/<ID>` branch), a local branch, or a remote-tracking branch (`origin/x`). A branch that comes
 * from a remote brings that remote's evidence notes with it: they are fetched (host git) into a ref of their
 * own, so the person's local notes are never overwritten. A pull/merge request URL is recognised and refused
 * for now (it needs the forge's API): the message says to pass its branch.
 */
import { existsSync } from 'node:fs';
import { UserError } from '../errors.js';
import { isValidTaskId } from '../core/task-id.js';
import { remoteCredential } from '../remote/remote-credentials.js';
import { parseRemoteUrl } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import { EVIDENCE_NOTES_REF, fetchedNotesRef } from './evidence-note.js';

/** How long fetching a branch or the notes from a remote may take. */
const FETCH_TIMEOUT_MS = 120_000;

const PULL_REQUEST_URL = /^https?:\/\/\S+\/(?:pull|pulls|merge_requests)\/\d+\/?$/;

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

/** A pull/merge request URL (or any URL) is not taken yet: the usage error says to pass its branch. */
export function refusePullRequestUrl(argument: string): void {
  if (PULL_REQUEST_URL.test(argument) || /^https?:\/\//.test(argument))
    throw new UserError(
      'usage',
      `verify does not take a pull request URL yet. Pass its branch instead: \`git fetch origin <branch> ${EVIDENCE_NOTES_REF}:${EVIDENCE_NOTES_REF}\`, then \`agent-runner verify origin/<branch>\`.`,
    );
}

/** Resolves `argument` in `repoRoot`; a name that is none of the accepted forms is a usage error. */
export async function resolveVerifyTarget(
  repoRoot: string,
  argument: string,
  env: NodeJS.ProcessEnv,
): Promise<VerifyTarget> {
  refusePullRequestUrl(argument);
  if (argument.startsWith('-') || argument.includes('..') || argument.trim() === '')
    throw new UserError('usage', `\`${argument}\` is no branch or task ID.`);
  const notices: string[] = [];
  // A task ID of this repository (its run data) names its task branch.
  if (isValidTaskId(argument) && existsSync(taskLayout(repoRoot, argument).runDir)) {
    const ref = `refs/heads/agent-runner/${argument}`;
    if (await refExists(repoRoot, ref)) return local(repoRoot, ref, env, notices);
  }
  if (await refExists(repoRoot, `refs/heads/${argument}`))
    return local(repoRoot, `refs/heads/${argument}`, env, notices);
  if (await refExists(repoRoot, `refs/remotes/${argument}`)) return remote(repoRoot, argument, env, notices);
  if (isValidTaskId(argument) && (await refExists(repoRoot, `refs/heads/agent-runner/${argument}`)))
    return local(repoRoot, `refs/heads/agent-runner/${argument}`, env, notices);
  throw new UserError(
    'usage',
    `No task, branch or remote branch named \`${argument}\` in ${repoRoot}. Pass a task ID, a local branch, or a remote branch (\`git fetch origin\` first, then \`agent-runner verify origin/<branch>\`).`,
  );
}

/** A local branch: the local notes, and its upstream's notes fetched first when it has one. */
async function local(
  repoRoot: string,
  ref: string,
  env: NodeJS.ProcessEnv,
  notices: string[],
): Promise<VerifyTarget> {
  const upstream = (
    await tryGit(['for-each-ref', '--format=%(upstream:remotename)', ref], { cwd: repoRoot })
  ).stdout.trim();
  const remoteName = upstream !== '' && upstream !== '.' ? upstream : null;
  const notesRefs = [EVIDENCE_NOTES_REF];
  if (remoteName && (await fetchNotes(repoRoot, remoteName, env, notices)))
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
    await fetchFrom(repoRoot, remoteName, [`+refs/heads/${branch}:${ref}`], env, notices);
    if (await fetchNotes(repoRoot, remoteName, env, notices)) notesRefs.unshift(fetchedNotesRef(remoteName));
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
): Promise<boolean> {
  return fetchFrom(
    repoRoot,
    remoteName,
    [`+${EVIDENCE_NOTES_REF}:${fetchedNotesRef(remoteName)}`],
    env,
    notices,
  );
}

/** Fetches `refspecs` from the remote with its credential (host git only); false, with a notice, on failure. */
async function fetchFrom(
  repoRoot: string,
  remoteName: string,
  refspecs: string[],
  env: NodeJS.ProcessEnv,
  notices: string[],
): Promise<boolean> {
  const url = (await tryGit(['remote', 'get-url', remoteName], { cwd: repoRoot })).stdout.trim();
  const parsed = url ? parseRemoteUrl(url) : null;
  const credential = parsed ? remoteCredential(parsed, env) : null;
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
