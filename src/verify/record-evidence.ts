/**
 * The end of a task leaves its evidence on its branch: the record (evidence-record.ts), redacted like every
 * journal line, attached by host git to the task branch's head as a note under `refs/notes/agent-runner`.
 */
import type { TaskRecord } from '../core/task-record.js';
import { VERSION } from '../version.js';
import { writeEvidenceNote } from './evidence-note.js';
import { evidenceOf } from './evidence-record.js';

/** Writes the evidence of `record` on its branch's head; the commit it is on, or null when it has no head. */
export async function recordEvidence(
  record: TaskRecord,
  where: {
    repoRoot: string;
    image: string | null;
    /** The task's redaction of JSON text (keys and tokens never reach a note that is pushed). */
    redactJson: (text: string) => string;
    now?: () => Date;
  },
): Promise<string | null> {
  const evidence = evidenceOf(record, {
    image: where.image,
    recordedAt: (where.now?.() ?? new Date()).toISOString(),
    version: VERSION,
  });
  if (!evidence) return null;
  await writeEvidenceNote(where.repoRoot, evidence.headSha, where.redactJson(JSON.stringify(evidence)));
  return evidence.headSha;
}
