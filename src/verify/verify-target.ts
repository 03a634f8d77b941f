/**
 * What `verify` was given, resolved to a branch and its head: a task ID (this repository's run data, or its
 * `agent-runner/<ID>` branch), a local branch, or a remote-tracking branch (`origin/x`). A branch that comes
 * from a remote brings that remote's evidence notes with it: they are fetched (host git) into a ref of their
 * own, so the person's local notes are never overwritten. A pull request (GitHub) or merge request (GitLab)
 * URL is change-request-target.ts: the request's own head ref, never a branch of the same name.
 */
import { existsSync } from 'node:fs';
import { UserError } from '../errors.js';
import { isValidTaskId } from '../core/task-id.js';
import type { ForgeKind } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import {
  changeRequestTarget,
  parseChangeRequestUrl,
  type ChangeRequestAccess,
} from './change-request-target.js';
import { EVIDENCE_NOTES_REF, fetchedNotesRef } from './evidence-note.js';
import { fetchFrom, fetchNotes, headOf, refExists } from './remote-fetch.js';

export {
  changeRequestApiUrl,
  parseChangeRequestUrl,
  type ChangeRequestAccess,
  type ChangeRequestUrl,
} from './change-request-target.js';

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
  if (request) return changeRequestTarget(repoRoot, request, env, access);
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
