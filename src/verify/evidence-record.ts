/**
 * The evidence a task leaves on its branch: a git note under `refs/notes/agent-runner` on the task branch's head
 * commit (evidence-note.ts), JSON, versioned, written by host git at the end of a task. It is built from the
 * task summary's own types (the DoD outcome, the baseline, each criterion with its check and result), so
 * `verify` re-runs exactly what the task recorded and compares result with result.
 */
import * as z from 'zod';
import {
  baselineSchema,
  criterionEvidenceSchema,
  dodOutcomeSchema,
  taskStateSchema,
} from '../core/records.js';
import type { TaskRecord } from '../core/task-record.js';
import { lastRecordedEvidence } from '../core/task-record.js';

/** The version of the evidence record; a reader refuses any other. */
export const EVIDENCE_VERSION = 1;

export const evidenceRecordSchema = z.object({
  agentRunnerEvidence: z.literal(EVIDENCE_VERSION),
  taskId: z.string(),
  state: taskStateSchema,
  /** The task branch (`agent-runner/<ID>`). */
  branch: z.string(),
  baseSha: z.string(),
  /** The task branch's head when the task ended: the commit the note is attached to. */
  headSha: z.string(),
  /**
   * The commit the sandbox had checked out while the recorded checks ran (null: not known to be a commit of
   * the branch). Shown beside `headSha` when they differ.
   */
  checkedHead: z.string().nullable(),
  /** The sandbox image the checks ran in (null: not known). */
  image: z.string().nullable(),
  /** The DoD commands with their results, exit codes, test counts and each one's result on the base. */
  dod: dodOutcomeSchema.nullable(),
  /** The DoD on the base before any change, when it ran. */
  baseline: baselineSchema.nullable(),
  /** Every acceptance criterion with its check and that check's result. */
  criteria: z.array(criterionEvidenceSchema),
  recordedAt: z.string(),
  agentRunnerVersion: z.string(),
});

/** What a task recorded about its checks, as the note on its branch holds it. */
export type EvidenceRecord = z.infer<typeof evidenceRecordSchema>;

/**
 * The evidence of an ended task, or null when it has no head of its own to attach it to (no validation ran,
 * or the branch holds no commit beyond its base: a note there would sit on the person's own commit).
 */
export function evidenceOf(
  record: TaskRecord,
  context: { image: string | null; recordedAt: string; version: string },
): EvidenceRecord | null {
  const latest = lastRecordedEvidence(record.runs);
  const branch = latest?.facts.taskBranch;
  if (!latest || !branch || branch.headSha === latest.facts.baseSha) return null;
  return {
    agentRunnerEvidence: EVIDENCE_VERSION,
    taskId: record.taskId,
    state: record.state,
    branch: branch.name,
    baseSha: latest.facts.baseSha,
    headSha: branch.headSha,
    checkedHead: latest.checkedHead,
    image: context.image,
    dod: latest.dod ?? null,
    baseline: record.baseline ?? null,
    criteria: record.criteria,
    recordedAt: context.recordedAt,
    agentRunnerVersion: context.version,
  };
}
