/**
 * The zod schemas of what a task records and reads back (the event journal that `resume` rebuilds from, the
 * `--json` summary): the single source of the core's record types (types.ts infers them from here). One schema
 * per concept: a run record, the facts, a DoD result, a criterion check result, usage.
 */
import * as z from 'zod';
import { acceptanceCriterionSchema, criterionCheckSchema, decisionSchema } from '../protocol/messages.js';
import { TASK_STATES } from './task-state.js';

/** Tokens of one model call or one worker run. */
export const tokenUsageSchema = z.object({
  inputTokens: z.number(),
  cachedInputTokens: z.number(),
  outputTokens: z.number(),
  reasoningTokens: z.number(),
});

/** Tokens and money (USD; 0 when the model has no price). */
export const usageSchema = tokenUsageSchema.extend({ costUsd: z.number() });

export const dodCheckStatusSchema = z.enum(['passed', 'failed', 'timeout', 'skipped']);

/**
 * How many tests a check's output says passed, failed and were skipped (src/core/test-counts.ts): read from
 * output the worker can shape, so shown to a person and never read by the completion gate.
 */
export const testCountsSchema = z.object({
  passed: z.number(),
  failed: z.number(),
  skipped: z.number(),
});

/** Tracked files a check changed, put back after it (at most 20 named, all counted). */
export const rewroteSchema = z.object({ paths: z.array(z.string()), count: z.number() });

export const dodCheckResultSchema = z.object({
  name: z.string(),
  command: z.string(),
  status: dodCheckStatusSchema,
  exitCode: z.number().nullable(),
  durationMs: z.number(),
  outputTail: z.string(),
  /** The test counts its output's summary gives (absent: none found, or a journal of an older version). */
  tests: testCountsSchema.optional(),
  /** Tracked files the check changed (put back after it; at most 20 named): it did not check the commit. */
  rewrote: rewroteSchema.optional(),
  /**
   * The failing tests its output names (vitest, jest, mocha, node's test runner, pytest, go test, cargo test;
   * at most 200): evidence, and what tells a test red on the base from one this task broke.
   */
  failingTests: z.array(z.string()).optional(),
  /** This check on the task's base, before any change (src/core/baseline.ts): absent when no baseline ran. */
  base: z
    .object({
      status: dodCheckStatusSchema,
      exitCode: z.number().nullable(),
      tests: testCountsSchema.optional(),
      /**
       * `green_before`: it passed on the base. `red_before`: it failed on the base too and is not worse (no
       * failing test the base did not have). `worse`: it failed on the base and fails worse now (`newFailures`).
       */
      verdict: z.enum(['green_before', 'red_before', 'worse']),
      newFailures: z.array(z.string()).optional(),
    })
    .optional(),
});

export const dodOutcomeSchema = z.object({
  /** `none`: nothing configured and nothing detected. */
  status: z.enum(['passed', 'failed', 'skipped', 'none']),
  results: z.array(dodCheckResultSchema),
  ranOnDirtyTree: z.boolean(),
  /** Where the checks came from: `config`, or what detection looked at (`package.json`, `go.mod`...). */
  source: z.string(),
});

/** The DoD run once on the task's base tree, before any worker run (`dod.baseline: auto`). */
export const baselineSchema = z.object({
  baseSha: z.string(),
  dod: dodOutcomeSchema,
});

export const criterionCheckStatusSchema = z.enum([
  'passed',
  'failed',
  'timeout',
  'not_executable',
  'not_executed',
]);

export const criterionCheckResultSchema = z.object({
  criterionId: z.string(),
  critical: z.boolean(),
  /** The check's kind as the plan wrote it. */
  kind: z.string(),
  /** What ran or was looked at: the command, the file, the named test. */
  target: z.string(),
  status: criterionCheckStatusSchema,
  exitCode: z.number().nullable(),
  durationMs: z.number(),
  outputTail: z.string(),
  /** The test counts its output's summary gives (absent: none found, or a journal of an older version). */
  tests: testCountsSchema.optional(),
  /** In words: why it failed, was not executable or not executed. */
  reason: z.string(),
  /** The sandbox had uncommitted changes when it ran: not evidence about the committed work. */
  ranOnDirtyTree: z.boolean(),
  /** Tracked files the check changed (put back after it): it failed, having not checked the commit. */
  rewrote: rewroteSchema.optional(),
});

/** What the runner observed itself after a run. */
/**
 * A bound of the replay that the worker's commits went over (`sandbox.replay.*`): which one, its figure and what
 * was found. Nothing was replayed then; the commits stay in the sandbox repository.
 */
export const replayCapSchema = z.object({
  cap: z.enum(['max_commits', 'max_tree_bytes']),
  limit: z.number(),
  actual: z.number(),
});

export const taskFactsSchema = z.object({
  baseSha: z.string(),
  headSha: z.string(),
  commits: z.array(z.object({ sha: z.string(), subject: z.string() })),
  dirty: z.boolean(),
  /** `git status --porcelain` lines when dirty. */
  uncommitted: z.array(z.string()),
  changedFiles: z.array(z.string()),
  diffStat: z.string(),
  /** The diff since base, cut to a bounded size for the assessment. */
  diff: z.string(),
  scopeViolations: z.array(z.string()),
  /**
   * The task branch `agent-runner/<ID>` in the person's repository and the commit it points at: where the work
   * really is. `headSha` is the worker's head; COMPLETE needs the branch to hold it. Absent in journals
   * written before it was observed (then the branch is not known to hold anything).
   */
  taskBranch: z.object({ name: z.string(), headSha: z.string() }).optional(),
  /** Set when the worker's head could not be put on the task branch: the ref that holds it instead. */
  pendingRef: z.string().optional(),
  /** Why the worker's head is not on the task branch, in words (git's own message shortened and sanitised). */
  pendingReason: z.string().optional(),
  /**
   * What kept the runner from observing everything, in words: a sandbox repository the host refused to read
   * (links or planted files in its `.git`), a status that could not be read. No COMPLETE while any is there.
   */
  problems: z.array(z.string()).optional(),
  /** Set when the worker's commits went over a bound of the replay: none of them was brought over. */
  replayCapped: replayCapSchema.optional(),
});

export const criterionStatusSchema = z.enum(['passed', 'failed', 'unknown']);

export const assessmentSchema = z.object({
  allCriteriaSatisfied: z.boolean(),
  summary: z.string(),
  byCriterion: z.array(z.object({ id: z.string(), status: criterionStatusSchema, comment: z.string() })),
  retrospective: z.array(z.string()),
  /** Decisions offered as memory bank proposals (absent in journals written before they were asked for). */
  decisions: z.array(decisionSchema).optional(),
});

export const workerModeSchema = z.enum(['exec', 'resume']);

export const metaDecisionSchema = z.object({
  action: z.enum(['run_worker', 'mark_complete', 'ask_human', 'abort']),
  reason: z.string(),
  usedPatterns: z.array(z.string()),
  workerCall: z.object({ workerType: z.string(), mode: workerModeSchema, prompt: z.string() }).optional(),
  question: z.string().optional(),
});

/** What an `ask_human` decision asks the person: its question, else its reason (the one rule). */
export function askedQuestion(decision: z.infer<typeof metaDecisionSchema>): string {
  return decision.question ?? decision.reason;
}

export const workerCommandSchema = z.object({
  command: z.string(),
  exitCode: z.number().nullable(),
  status: z.string(),
  outputTail: z.string(),
});

/** One worker run and what followed it (the latest validation of the task, when it is the last run). */
export const runRecordSchema = z.object({
  index: z.number(),
  decision: metaDecisionSchema,
  startedAt: z.number(),
  durationMs: z.number(),
  mode: workerModeSchema,
  /** The worker that ran and its model (absent in journals of versions with one worker: codex). */
  workerType: z.string().optional(),
  model: z.string().optional(),
  exitCode: z.number(),
  timedOut: z.boolean(),
  failed: z.boolean(),
  threadId: z.string().nullable(),
  commands: z.array(workerCommandSchema),
  finalMessage: z.string().nullable(),
  errors: z.array(z.string()),
  usage: usageSchema,
  facts: taskFactsSchema.optional(),
  dod: dodOutcomeSchema.optional(),
  /** The acceptance criteria's checks, run with the DoD on the same tree. */
  criteriaChecks: z.array(criterionCheckResultSchema).optional(),
  /**
   * The replayed commit the sandbox had checked out while the DoD and the criteria checks ran (read before and
   * after them); null when it was no commit the runner brought back, could not be read, or moved meanwhile.
   * The checks are evidence about `facts.headSha` only when it is that commit.
   */
  checkedHead: z.string().nullable().optional(),
  assessment: assessmentSchema.optional(),
  /** The evidence fingerprint the assessment judged; a new assessment is asked only when it changes. */
  assessedEvidence: z.string().optional(),
  /** Why the completion gate refused, fed back to the Meta-agent. */
  refusals: z.array(z.string()),
});

export const planSchema = z.object({
  title: z.string(),
  acceptanceCriteria: z.array(acceptanceCriterionSchema),
});

export const taskStateSchema = z.enum(TASK_STATES);

/** One acceptance criterion with everything known about it: the plan, the assessment, its check's result. */
export const criterionEvidenceSchema = z.object({
  id: z.string(),
  description: z.string(),
  type: z.string(),
  critical: z.boolean(),
  check: criterionCheckSchema.nullable(),
  /** The latest assessment's verdict (`not assessed` when there was none). */
  status: z.union([criterionStatusSchema, z.literal('not assessed')]),
  comment: z.string(),
  /** The latest result of its check (null: no check planned, or no validation ran). */
  checkResult: criterionCheckResultSchema.nullable(),
});

/**
 * The check a task that did not complete stopped on (src/core/root-cause.ts): which, its exit code, the first
 * informative line of its output and the fix where one is known. Advice for the person, never gated on.
 */
export const rootCauseSchema = z.object({
  /** `DoD check test`, `criterion AC1's command check`. */
  check: z.string(),
  command: z.string(),
  status: z.string(),
  exitCode: z.number().nullable(),
  errorLine: z.string(),
  hint: z.string().nullable(),
  tests: testCountsSchema.optional(),
});

/**
 * The kind of one disk cap a task got: `hard` (the directory is a file system of the cap's size: no write
 * passes it) or `watched` (measured from the host, the sandbox stopped once past it) with the reason.
 */
export const diskCapKindSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('hard') }),
  z.object({ kind: z.literal('watched'), reason: z.string() }),
]);
export type DiskCapKind = z.infer<typeof diskCapKindSchema>;

/** The kind of each disk cap (`sandbox.disk.<cap>`) of a task's sandbox. */
export const diskCapKindsSchema = z.object({ repository: diskCapKindSchema, codexHome: diskCapKindSchema });
export type DiskCapKinds = z.infer<typeof diskCapKindsSchema>;

/** The OCI runtime a container runs under: `runc` (the host's kernel) or `runsc` (gVisor's user-space kernel). */
export const containerRuntimeSchema = z.enum(['runc', 'runsc']);
export type ContainerRuntime = z.infer<typeof containerRuntimeSchema>;

/** The runtime a task's containers ran under and why it was chosen (`sandbox.runtime`, src/sandbox/container-runtime.ts). */
export const sandboxRuntimeSchema = z.object({ runtime: containerRuntimeSchema, reason: z.string() });
export type SandboxRuntimeChoice = z.infer<typeof sandboxRuntimeSchema>;
/** What a follow-up changed in the plan, as the runner merged it (the note and the journal say so). */
export const followupPlanChangesSchema = z.object({
  /** New criteria (ids the plan did not have). */
  added: z.array(z.string()),
  /** Criteria that had not held, revised by the reply. */
  revised: z.array(z.string()),
  /** Criteria that held and that the reply left out (`missing`) or changed (`changed`): kept as they were. */
  protected: z.array(z.object({ id: z.string(), why: z.enum(['missing', 'changed']) })),
  /** Criteria that had not held and that the reply left out: kept as they were (a follow-up drops nothing). */
  carried: z.array(z.string()),
});

/** What was spent before the current follow-up (the first run and earlier follow-ups): shown apart, not counted. */
export const earlierSpendingSchema = z.object({
  runs: z.number(),
  metaCalls: z.number(),
  usage: z.object({ meta: usageSchema, worker: usageSchema, total: usageSchema }),
});

/** The follow-up a task's attempt belongs to, as its summary and note carry it. */
export const followupSummarySchema = z.object({
  number: z.number(),
  /** The person's instruction (redacted like every text the journal keeps). */
  instruction: z.string(),
  /** The task branch's head when the follow-up began: its commits are the ones after it. */
  fromSha: z.string().nullable(),
  /** The criteria and their evidence when the follow-up began. */
  before: z.array(criterionEvidenceSchema),
  /** How the plan was revised (absent until the revised plan is there). */
  changes: followupPlanChangesSchema.optional(),
  /** What the task spent before this follow-up. */
  earlier: earlierSpendingSchema,
});

/** How a task ended: what `run` prints, `--json` ends with, and `task_finished` records. */
export const taskSummarySchema = z.object({
  taskId: z.string(),
  title: z.string(),
  state: taskStateSchema,
  reason: z.string(),
  branch: z.string(),
  /** Where `branch` points (work the branch could not take is on the pending ref the reason names). */
  headSha: z.string().nullable(),
  notePath: z.string().nullable(),
  worktreePath: z.string().nullable(),
  runs: z.number(),
  metaCalls: z.number(),
  usage: z.object({ meta: usageSchema, worker: usageSchema, total: usageSchema }),
  durationMs: z.number(),
  exitCode: z.number(),
  /** Set when the task ended on an error (model unreachable, Docker gone...). */
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
  /** What the decision rests on (assessment, facts, DoD, criteria checks, executable evidence). */
  basis: z.array(z.string()),
  criteria: z.array(criterionEvidenceSchema),
  /** Set when the task did not complete and a check failed (absent in journals of older versions). */
  rootCause: rootCauseSchema.nullable().optional(),
  /** Which kind each disk cap was (absent: no sandbox was made, or a journal of an older version). */
  diskCaps: diskCapKindsSchema.nullable().optional(),
  /** The runtime the sandbox ran under and why (absent: no sandbox was made, or a journal of an older version). */
  sandboxRuntime: sandboxRuntimeSchema.nullable().optional(),
  /** The follow-up this attempt belongs to (absent: the task's first run, or a journal of an older version). */
  followup: followupSummarySchema.optional(),
});

/** What the worker reported while it ran (parsed from its event stream: attacker data, shown, never trusted). */
export const workerEventSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('thread_started'), threadId: z.string() }),
  z.object({ kind: z.literal('command_started'), command: z.string() }),
  z.object({
    kind: z.literal('command_finished'),
    command: z.string(),
    exitCode: z.number().nullable(),
    status: z.string(),
  }),
  z.object({ kind: z.literal('file_changed'), path: z.string(), change: z.string() }),
  z.object({ kind: z.literal('message'), text: z.string() }),
  z.object({ kind: z.literal('error'), message: z.string(), fatal: z.boolean() }),
]);
