/**
 * The evidence that applies to a branch's head: the note on the head itself, else the note on the nearest
 * commit of its history that has one (the branch moved since: commits made by hand on it). Read with host git
 * from the notes refs the target names, first found wins.
 */
import { UserError } from '../errors.js';
import { tryGit } from '../workspace/git/git-command.js';
import { readEvidenceNote } from './evidence-note.js';
import type { EvidenceRecord } from './evidence-record.js';
import type { VerifyTarget } from './verify-target.js';

/** How far back the history is searched for the commit the evidence is on. */
export const EVIDENCE_HISTORY_DEPTH = 1000;

export interface FoundEvidence {
  evidence: EvidenceRecord;
  /** The commit the note is on. */
  commit: string;
  notesRef: string;
}

/** The evidence of `target`'s head, or a usage error that says how to get it. */
export async function findEvidence(repoRoot: string, target: VerifyTarget): Promise<FoundEvidence> {
  const history = await tryGit(['rev-list', `--max-count=${EVIDENCE_HISTORY_DEPTH}`, target.headSha, '--'], {
    cwd: repoRoot,
  });
  // Newest first: the nearest commit with a note is the evidence the head grew from.
  const commits = history.stdout.split('\n').filter(Boolean);
  for (const notesRef of target.notesRefs) {
    const annotated = await annotatedCommits(repoRoot, notesRef);
    const commit = commits.find((candidate) => annotated.has(candidate));
    if (!commit) continue;
    const evidence = await readEvidenceNote(repoRoot, commit, notesRef);
    if (evidence) return { evidence, commit, notesRef };
  }
  const fetch = target.remote
    ? `\`git fetch ${target.remote} refs/notes/agent-runner:refs/notes/agent-runner\``
    : '`git fetch <remote> refs/notes/agent-runner:refs/notes/agent-runner` (the remote the branch came from)';
  throw new UserError(
    'usage',
    `No agent-runner evidence on ${target.branch} (${target.headSha.slice(0, 12)}) or the ${EVIDENCE_HISTORY_DEPTH} commits before it. ` +
      `If the branch was pushed with its evidence, fetch the notes: ${fetch}. ` +
      'Otherwise the task never ended with a head of its own: `agent-runner status` shows it, `agent-runner resume <ID>` finishes it.',
  );
}

/** The commits that have a note under `notesRef` (none when the ref does not exist). */
async function annotatedCommits(repoRoot: string, notesRef: string): Promise<Set<string>> {
  const listed = await tryGit(['notes', `--ref=${notesRef}`, 'list'], { cwd: repoRoot });
  if (listed.exitCode !== 0) return new Set();
  return new Set(
    listed.stdout
      .split('\n')
      .map((line) => line.trim().split(' ')[1])
      .filter((commit): commit is string => Boolean(commit)),
  );
}
