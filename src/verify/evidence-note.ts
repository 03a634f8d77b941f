/**
 * The evidence note on a task branch's head: written and read by host git (never by the sandbox) under
 * {@link EVIDENCE_NOTES_REF}, so it travels with the branch when that ref is pushed and fetched with it.
 */
import { UserError } from '../errors.js';
import { git, tryGit } from '../workspace/git/git-command.js';
import { evidenceRecordSchema, type EvidenceRecord } from './evidence-record.js';

/** Where the evidence notes live. */
export const EVIDENCE_NOTES_REF = 'refs/notes/agent-runner';

/** Where `verify` fetches a remote's evidence notes to (one ref per remote; the local notes are not touched). */
export function fetchedNotesRef(remote: string): string {
  return `refs/notes/agent-runner-fetched/${remote}`;
}

/**
 * The notes commit is agent-runner's own: a fixed identity, so writing it needs no user.name (a CI clone has
 * none) and says who wrote it.
 */
const NOTES_IDENTITY = {
  GIT_AUTHOR_NAME: 'agent-runner',
  GIT_AUTHOR_EMAIL: 'agent-runner@localhost',
  GIT_COMMITTER_NAME: 'agent-runner',
  GIT_COMMITTER_EMAIL: 'agent-runner@localhost',
};

/** How long writing the note may take: it is part of a task's finish, which must end promptly. */
const WRITE_TIMEOUT_MS = 15_000;

/**
 * Attaches `text` (already redacted JSON of an evidence record) to `commit`, replacing an earlier note there
 * (a resumed task ends again on the same head).
 */
export async function writeEvidenceNote(repoRoot: string, commit: string, text: string): Promise<void> {
  await git(['notes', `--ref=${EVIDENCE_NOTES_REF}`, 'add', '--force', '--file=-', commit], {
    cwd: repoRoot,
    input: text,
    env: NOTES_IDENTITY,
    timeoutMs: WRITE_TIMEOUT_MS,
  });
}

/** The evidence on `commit` under `notesRef`, or null when there is none; a note that is no evidence is an error. */
export async function readEvidenceNote(
  repoRoot: string,
  commit: string,
  notesRef: string = EVIDENCE_NOTES_REF,
): Promise<EvidenceRecord | null> {
  const shown = await tryGit(['notes', `--ref=${notesRef}`, 'show', commit], { cwd: repoRoot });
  if (shown.exitCode !== 0) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(shown.stdout);
  } catch {
    throw new UserError(
      'usage',
      `The note under ${notesRef} on ${commit} is not JSON: it is no evidence agent-runner wrote.`,
    );
  }
  const version = (raw as { agentRunnerEvidence?: unknown } | null)?.agentRunnerEvidence;
  if (version !== undefined && version !== 1)
    throw new UserError(
      'usage',
      `The evidence on ${commit} is of version ${String(version)}; this agent-runner reads version 1. Use the agent-runner that wrote it.`,
    );
  const parsed = evidenceRecordSchema.safeParse(raw);
  if (!parsed.success)
    throw new UserError(
      'usage',
      `The note under ${notesRef} on ${commit} is no evidence agent-runner wrote: ${parsed.error.issues
        .slice(0, 3)
        .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
        .join('; ')}`,
    );
  return parsed.data;
}
