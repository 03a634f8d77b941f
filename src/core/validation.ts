/**
 * VALIDATING, for a worker run and for `mark_complete` alike: bring the commits back and observe the facts,
 * run the DoD and the criteria checks (reused while nothing changed since they ran), ask for an assessment
 * when the evidence changed since the last one, then apply the completion gate.
 */
import { withBaseline } from './baseline.js';
import { decisionBasis, gateRefusals, type GateInput } from './completion-gate.js';
import { evidenceFingerprint, factsFingerprint } from './evidence-fingerprint.js';
import { goOn, stop, type Next } from './outcome.js';
import type { AssessmentEvidence } from './ports.js';
import { onlyEvidenceMissing, refusalMessage } from './refusal.js';
import type { Evidence, TaskLoop } from './task-loop.js';
import type { Assessment, MetaDecision } from './types.js';

/** Validates, then COMPLETE (a stop), or the refusals go back to the Meta-agent (FIXING → RUNNING). */
export async function validate(loop: TaskLoop, decision: MetaDecision, signal?: AbortSignal): Promise<Next> {
  loop.move({ type: 'validate' });
  const evidence = await observeAndCheck(loop, signal);
  if ('kind' in evidence) return evidence;
  const assessment = await assessIfChanged(loop, evidence, signal);
  if ('kind' in assessment) return assessment;
  const refusals = gateRefusals(gateInput(loop, evidence, assessment));
  const record = loop.currentRun();
  if (refusals.length === 0) {
    if (record) loop.recordRun(record);
    const reason = decision.action === 'mark_complete' ? decision.reason : assessment.summary;
    return stop({ code: 'complete', reason });
  }
  // Nothing a worker run can change: no check exists that could ever prove the work.
  if (onlyEvidenceMissing(refusals)) return stop({ code: 'no_evidence', refusals });
  const words = refusals.map(refusalMessage);
  const reasons =
    decision.action === 'mark_complete' ? [`mark_complete refused: ${words.join('; ')}`] : words;
  if (record) {
    record.refusals = reasons;
    loop.recordRun(record);
  }
  // VALIDATING → FIXING → RUNNING, with the reasons going back to the Meta-agent.
  loop.emit({ type: 'refused', reasons });
  loop.feedback.push(...reasons);
  loop.move({ type: 'fix', reasons });
  loop.move({ type: 'retry' });
  return goOn(reasons);
}

/** Facts, then the DoD and the criteria checks (reused while nothing changed since they ran). */
export async function observeAndCheck(loop: TaskLoop, signal?: AbortSignal): Promise<Evidence | Next> {
  const { sandboxId, plan } = loop;
  if (!sandboxId || !plan) throw new Error('validation without a sandbox or a plan');
  const record = loop.currentRun();
  const run = record?.index ?? 0;
  const facts = await observeFacts(loop, sandboxId, signal);
  loop.unobservedRun = null;
  loop.emit({ type: 'facts', run, facts });
  // Over a bound of the replay nothing was brought over: no check can speak for the work, a person decides.
  if (facts.replayCapped) return stop({ code: 'limit', limit: { code: 'replay', cap: facts.replayCapped } });
  const factsKey = factsFingerprint(facts);
  const previous = loop.evidence;
  const reuse = previous !== null && previous.factsKey === factsKey && !loop.workerRanSinceEvidence;
  let { dod, criteriaChecks, checkedHead } = reuse
    ? previous
    : { dod: undefined, criteriaChecks: [] as AssessmentEvidence['criteriaChecks'], checkedHead: null };
  if (!reuse) {
    // A stop that came during the observation ends the step here: no check runs after Ctrl-C or SIGTERM.
    const stopped = loop.limitReached(signal);
    if (stopped) return stop(stopped);
    // The checks run the repository's own scripts, which can move the sandbox's checkout: what they ran on is
    // read before and after them, and counts only when it is one commit.
    const before = await loop.deps.workspace.checkedOutHead(sandboxId, loop.callSignal(signal));
    if (!loop.options.dodSkipped) {
      // Each check compared with the same check on the base, when the baseline ran (src/core/baseline.ts).
      dod = withBaseline(
        await loop.deps.workspace.runDod(sandboxId, facts, loop.bounds(signal)),
        loop.baseline,
      );
      loop.emit({ type: 'dod', run, dod });
    }
    const limit = (await loop.diskLimit()) ?? loop.limitReached(signal);
    if (limit) return stop(limit);
    criteriaChecks = await loop.deps.workspace.runCriteriaChecks(
      sandboxId,
      plan.acceptanceCriteria,
      facts,
      loop.bounds(signal),
      dod,
    );
    loop.emit({ type: 'criteria_checks', run, results: [...criteriaChecks] });
    const after = await loop.deps.workspace.checkedOutHead(sandboxId, loop.callSignal(signal));
    checkedHead = before === after ? before : null;
  }
  const limit = (!reuse ? await loop.diskLimit() : null) ?? loop.limitReached(signal);
  if (limit) return stop(limit);
  loop.workerRanSinceEvidence = false;
  const fingerprint = evidenceFingerprint(facts, dod, criteriaChecks, checkedHead);
  loop.evidence = { run: record, facts, dod, criteriaChecks, checkedHead, factsKey, fingerprint };
  if (record) {
    record.facts = facts;
    if (dod) record.dod = dod;
    record.criteriaChecks = [...criteriaChecks];
    record.checkedHead = checkedHead;
    loop.recordRun(record);
  }
  return loop.evidence;
}

/** The observation, cut by Ctrl-C, SIGTERM or the wall clock (then the finish leaves the replay alone). */
async function observeFacts(loop: TaskLoop, sandboxId: string, signal?: AbortSignal) {
  const cut = loop.observeSignal(signal);
  try {
    return await loop.deps.workspace.observe(sandboxId, cut);
  } catch (error) {
    if (cut.aborted) loop.observationCut = true;
    throw error;
  }
}

/** The assessment of this evidence: the last one when it judged the same evidence, else a new call. */
async function assessIfChanged(
  loop: TaskLoop,
  evidence: Evidence,
  signal?: AbortSignal,
): Promise<Assessment | Next> {
  const record = loop.currentRun();
  const last = record
    ? record.assessment && { assessment: record.assessment, fingerprint: record.assessedEvidence }
    : loop.looseAssessment;
  if (last && last.fingerprint === evidence.fingerprint) return last.assessment;
  const limit = loop.limitReached(signal);
  if (limit) return stop(limit);
  const { assessment, usage } = await loop.deps.meta.assess(loop.view(), evidence, loop.callSignal(signal));
  loop.ledger.countMeta(usage);
  loop.emit({ type: 'assessment', run: record?.index ?? 0, assessment, usage });
  if (record) {
    record.assessment = assessment;
    record.assessedEvidence = evidence.fingerprint;
  } else loop.looseAssessment = { assessment, fingerprint: evidence.fingerprint };
  return assessment;
}

export function gateInput(
  loop: TaskLoop,
  evidence: AssessmentEvidence | null,
  assessment: Assessment | undefined,
): GateInput {
  return {
    criteria: loop.plan?.acceptanceCriteria ?? [],
    assessment,
    facts: evidence?.facts,
    dod: evidence?.dod,
    criteriaChecks: evidence?.criteriaChecks ?? [],
    dodSkipped: loop.options.dodSkipped,
    checkedHead: evidence?.checkedHead ?? null,
    baseline: loop.baseline,
    redBase: loop.options.baseline?.redBase ?? 'no_worse',
  };
}

/** What the final decision rests on. */
export function basisOf(
  loop: TaskLoop,
  evidence: AssessmentEvidence | null,
  assessment: Assessment | undefined,
) {
  return decisionBasis(gateInput(loop, evidence, assessment));
}
