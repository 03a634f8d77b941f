/**
 * Pushing a task's branch from the host. Only host git pushes, never the sandbox: the remote's URL is read from
 * the host repository's own configuration (`git remote get-url --push`), the credential reaches git only as an
 * env-passed header scoped to that URL (src/remote/remote-credentials.ts), and the only refs ever pushed are
 * `refs/heads/agent-runner/<ID>` and, when it exists here, `refs/notes/agent-runner` (the evidence `verify`
 * reads). No hook of the repository runs (host-git-settings.ts), `pre-push` included.
 *
 * The branch is replaced only with a lease: the remote branch must still be where agent-runner last pushed it
 * (or absent, the first time). A commit someone else pushed there meanwhile makes git refuse, and is reported.
 */
import type { Redactor } from '../notes/redact.js';
import { remoteCredential } from '../remote/remote-credentials.js';
import { displayUrl, parseRemoteUrl, type ForgeKind, type RemoteUrl } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';

/** The ref `agent-runner verify` reads its evidence from; pushed beside the branch when it exists. */
export const EVIDENCE_NOTES_REF = 'refs/notes/agent-runner';

/** The git config of every push agent-runner makes: no signing prompt, no credential prompt. */
export const PUSH_CONFIG = { 'push.gpgSign': 'false', 'credential.interactive': 'false' } as const;

/** How long one push may take before it is stopped and reported unreachable. */
export const PUSH_TIMEOUT_MS = 2 * 60_000;

export interface PushInput {
  /** The host repository the task ran in. */
  repoRoot: string;
  taskId: string;
  /** The remote's name in the host repository (`deliver.remote`). */
  remoteName: string;
  env: NodeJS.ProcessEnv;
  forgeOverride: ForgeKind | null;
  /**
   * The commit agent-runner last pushed to the branch of the remote shown as given (no credentials); null: it
   * never pushed there, so the branch must be absent.
   */
  leaseFor: (remote: string) => string | null;
  redact: Redactor;
  timeoutMs?: number;
  /** git config that carries the credential (a fleet node's, from the `--repo` URL); else the forge's token. */
  credentialConfig?: Record<string, string>;
  /** More refs of the host repository pushed as they are, replacing the remote's (a task's WIP ref); absent ones skipped. */
  extraRefs?: readonly string[];
}

/** The kinds of a failed push, each reported with its fix. */
export type PushFailureKind = 'no_remote' | 'no_branch' | 'unreachable' | 'auth' | 'rejected' | 'stale';

export type PushResult =
  | { ok: true; remote: RemoteUrl; sha: string; notesPushed: boolean; notesError: string | null }
  | { ok: false; kind: PushFailureKind; message: string; remote: RemoteUrl | null };

/** The remote's push URL as the host repository configures it, or null when there is no such remote. */
export async function hostRemoteUrl(repoRoot: string, remoteName: string): Promise<RemoteUrl | null> {
  const result = await tryGit(['remote', 'get-url', '--push', remoteName], { cwd: repoRoot });
  if (result.exitCode !== 0) return null;
  return parseRemoteUrl(result.stdout.trim());
}

async function refSha(repoRoot: string, ref: string): Promise<string | null> {
  const result = await tryGit(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: repoRoot });
  if (result.exitCode === 0) return result.stdout.trim();
  // A notes ref points at a commit too; anything else (a tag, a tree) is not ours to push.
  return null;
}

/** Pushes `agent-runner/<ID>` (with a lease) and the evidence notes; never throws for a remote's refusal. */
export async function pushTaskBranch(input: PushInput): Promise<PushResult> {
  const branchRef = `refs/heads/agent-runner/${input.taskId}`;
  const remote = await hostRemoteUrl(input.repoRoot, input.remoteName);
  if (remote === null) {
    return {
      ok: false,
      kind: 'no_remote',
      remote: null,
      message:
        `The repository ${input.repoRoot} has no remote "${input.remoteName}" to push to. Add it ` +
        `(\`git remote add ${input.remoteName} URL\`) or name another with deliver.remote.`,
    };
  }
  const shown = displayUrl(remote.raw);
  const sha = await refSha(input.repoRoot, branchRef);
  if (sha === null) {
    return {
      ok: false,
      kind: 'no_branch',
      remote,
      message: `The task branch agent-runner/${input.taskId} does not exist in ${input.repoRoot}: nothing to push.`,
    };
  }
  const lease = input.leaseFor(shown);
  const notes = await refSha(input.repoRoot, EVIDENCE_NOTES_REF);
  const credentialConfig =
    input.credentialConfig ?? remoteCredential(remote, input.env, input.forgeOverride)?.gitConfig ?? {};
  const extra: string[] = [];
  for (const ref of input.extraRefs ?? []) {
    const extraSha = await refSha(input.repoRoot, ref);
    if (extraSha !== null) extra.push(`+${extraSha}:${ref}`);
  }
  const refspecs = [
    `${sha}:${branchRef}`,
    ...(notes ? [`${EVIDENCE_NOTES_REF}:${EVIDENCE_NOTES_REF}`] : []),
    ...extra,
  ];
  const result = await tryGit(
    [
      'push',
      '--porcelain',
      '--no-verify',
      `--force-with-lease=${branchRef}:${lease ?? ''}`,
      remote.raw,
      ...refspecs,
    ],
    {
      cwd: input.repoRoot,
      config: { ...credentialConfig, ...PUSH_CONFIG },
      timeoutMs: input.timeoutMs ?? PUSH_TIMEOUT_MS,
    },
  ).catch((error: unknown) => ({ exitCode: -1, stdout: '', stderr: (error as Error).message }));
  const statuses = refStatuses(result.stdout);
  const branch = statuses.get(branchRef);
  const said = input.redact(`${result.stderr}\n${result.stdout}`.replace(/\s+/g, ' ').trim()).slice(0, 600);
  if (branch && (branch.flag === ' ' || branch.flag === '+' || branch.flag === '*' || branch.flag === '=')) {
    const noteStatus = notes ? statuses.get(EVIDENCE_NOTES_REF) : undefined;
    const notesPushed = noteStatus !== undefined && noteStatus.flag !== '!';
    return {
      ok: true,
      remote,
      sha,
      notesPushed,
      notesError: notes && !notesPushed ? input.redact(noteStatus?.summary ?? 'not pushed') : null,
    };
  }
  return pushFailure(input, remote, lease, branch, said, result.exitCode);
}

/** A push that did not put the branch on the remote, by kind, with its fix. */
function pushFailure(
  input: PushInput,
  remote: RemoteUrl,
  lease: string | null,
  branch: { flag: string; summary: string } | undefined,
  said: string,
  exitCode: number,
): PushResult {
  const shown = displayUrl(remote.raw);
  if (branch?.flag === '!') {
    if (/stale info|fetch first|non-fast-forward/.test(branch.summary)) {
      return {
        ok: false,
        kind: 'stale',
        remote,
        message:
          `The push of agent-runner/${input.taskId} to ${shown} was refused: the remote branch holds a commit ` +
          `agent-runner did not push (${lease ? `it last pushed ${lease.slice(0, 12)}` : 'it never pushed it'}). ` +
          `Nothing was overwritten. Look at the remote branch, then delete or rename it, and run ` +
          `\`agent-runner deliver ${input.taskId}\` again.`,
      };
    }
    return {
      ok: false,
      kind: 'rejected',
      remote,
      message:
        `The remote ${shown} refused agent-runner/${input.taskId} (${input.redact(branch.summary)}): ${said}. ` +
        `A protected branch or a server hook refused the push; allow pushes to agent-runner/* on the remote, ` +
        `then run \`agent-runner deliver ${input.taskId}\`.`,
    };
  }
  if (
    /Authentication failed|could not read (Username|Password)|terminal prompts disabled|returned error: 40[13]/i.test(
      said,
    )
  ) {
    return {
      ok: false,
      kind: 'auth',
      remote,
      message:
        `${shown} did not accept agent-runner's credentials (${said}). Set GH_TOKEN or GITHUB_TOKEN (GitHub), ` +
        `GITLAB_TOKEN (GitLab) with write access to the repository, or set up git's credential helper, then run ` +
        `\`agent-runner deliver ${input.taskId}\`.`,
    };
  }
  return {
    ok: false,
    kind: 'unreachable',
    remote,
    message:
      `The push of agent-runner/${input.taskId} to ${shown} did not go through: ${said || `git exited ${exitCode}`}. ` +
      `Check the remote's address and the network, then run \`agent-runner deliver ${input.taskId}\`.`,
  };
}

/** Each ref's line of `git push --porcelain`: its flag and its summary (`[rejected] (stale info)`). */
function refStatuses(stdout: string): Map<string, { flag: string; summary: string }> {
  const statuses = new Map<string, { flag: string; summary: string }>();
  for (const line of stdout.split('\n')) {
    const match = /^([ +\-*!=])\t([^\t]*)\t(.*)$/.exec(line);
    if (!match) continue;
    const to = (match[2] as string).split(':').at(-1) as string;
    statuses.set(to, { flag: match[1] as string, summary: match[3] as string });
  }
  return statuses;
}
