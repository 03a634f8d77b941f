/**
 * What `verify` fetches from a remote, with host git only and the remote's credential from the environment: a
 * branch or a request's head ref, and the remote's evidence notes into a ref of their own (the person's local
 * notes are never overwritten). A failed fetch is a notice, not an error: the caller decides what it means.
 */
import { UserError } from '../errors.js';
import { remoteCredential } from '../remote/remote-credentials.js';
import { parseRemoteUrl, type ForgeKind } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';
import { EVIDENCE_NOTES_REF, fetchedNotesRef } from './evidence-note.js';

/** How long fetching a branch or the notes from a remote may take. */
const FETCH_TIMEOUT_MS = 120_000;

/** Fetches the remote's evidence notes into a ref of their own; false, with a notice, on failure. */
export async function fetchNotes(
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
export async function fetchFrom(
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

/** Whether `ref` exists in `repoRoot`. */
export async function refExists(repoRoot: string, ref: string): Promise<boolean> {
  return (await tryGit(['show-ref', '--verify', '--quiet', ref], { cwd: repoRoot })).exitCode === 0;
}

/** The commit `ref` points at; a usage error when it points at none. */
export async function headOf(repoRoot: string, ref: string): Promise<string> {
  const result = await tryGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: repoRoot });
  if (result.exitCode !== 0) throw new UserError('usage', `${ref} does not point at a commit.`);
  return result.stdout.trim();
}
