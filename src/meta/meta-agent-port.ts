/**
 * Adapts the Meta-agent (protocol messages, snake_case) to the core's MetaAgentPort (domain types).
 */
import { workOffBranch } from '../core/completion-gate.js';
import type { AssessmentEvidence, MetaAgentPort, MetaView } from '../core/ports.js';
import { refusalMessage } from '../core/refusal.js';
import type { Assessment, MetaDecision, Plan, RunRecord, TaskFacts, Usage } from '../core/types.js';
import type { MetaAgent } from './meta-agent.js';
import type { FactsForAssessment, HistoryEntry, LoopContext } from './meta-context.js';

const OUTPUT_TAIL_CHARS = 1500;

/** The PRD's first heading, else its first line: the task's title. */
export function titleOf(prd: string, fallback: string): string {
  const heading = /^#\s+(.+)$/m.exec(prd)?.[1]?.trim();
  const firstLine = prd
    .split('\n')
    .find((line) => line.trim())
    ?.trim();
  return (heading ?? firstLine ?? fallback).slice(0, 120);
}

function toHistoryEntry(run: RunRecord): HistoryEntry {
  const lastFailing = [...run.commands]
    .reverse()
    .find((command) => command.exitCode !== 0 && command.exitCode !== null);
  return {
    iteration: run.index,
    action: run.decision.action,
    reason: run.decision.reason,
    usedPatterns: run.decision.usedPatterns,
    workerType: run.decision.workerCall?.workerType,
    mode: run.mode,
    prompt: run.decision.workerCall?.prompt,
    workerSummary: run.finalMessage ?? undefined,
    exitCode: run.exitCode,
    timedOut: run.timedOut,
    durationMs: run.durationMs,
    commands: run.commands.map((command) => ({ command: command.command, exitCode: command.exitCode })),
    outputTail: [
      ...run.errors.map((error) => `error: ${error}`),
      ...(lastFailing ? [`last failing command: ${lastFailing.command}\n${lastFailing.outputTail}`] : []),
      ...run.refusals.map((reason) => `not complete: ${reason}`),
    ]
      .join('\n')
      .slice(-OUTPUT_TAIL_CHARS),
    assessmentSummary: run.assessment?.summary,
    allCriteriaSatisfied: run.assessment?.allCriteriaSatisfied,
  };
}

/** One paragraph of facts, in words the model reads easily. */
export function describeFacts(facts: TaskFacts, run: RunRecord | undefined): string {
  const offBranch = workOffBranch(facts);
  const parts = [
    run
      ? `Worker run ${run.index} exited ${run.exitCode}${run.timedOut ? ' (timed out)' : ''}${run.errors.length ? ` with errors: ${run.errors.join('; ')}` : ''}.`
      : '',
    `${offBranch ? "Worker's head" : 'Task branch head'} ${facts.headSha.slice(0, 12)}, ${facts.commits.length} commit(s) since base ${facts.baseSha.slice(0, 12)}${facts.commits.length ? `: ${facts.commits.map((commit) => commit.subject).join('; ')}` : ''}.`,
    offBranch ? `The work is NOT COMPLETE while this holds: ${refusalMessage(offBranch)}.` : '',
    facts.dirty
      ? `The working tree is NOT clean: ${facts.uncommitted.join(', ')}.`
      : 'The working tree is clean.',
    facts.scopeViolations.length
      ? `Scope violations: ${facts.scopeViolations.join(', ')}.`
      : 'No scope violations.',
    facts.diffStat ? `Diff stat: ${facts.diffStat.trim().split('\n').at(-1)}` : '',
    facts.problems?.length
      ? `The facts are INCOMPLETE (the task cannot be complete while this holds): ${facts.problems.join('; ')}.`
      : '',
  ];
  return parts.filter(Boolean).join(' ');
}

/** The evidence of one validation in the shape the prompt renders (the core's own result types). */
function evidenceForMeta(evidence: AssessmentEvidence, notes: readonly string[] = []): FactsForAssessment {
  return {
    summary: [
      describeFacts(evidence.facts, evidence.run),
      ...notes.map((item) => `Note from the runner: ${item}`),
    ].join(' '),
    dodResults: evidence.dod?.results ?? [],
    ...(evidence.dod ? { dodSource: evidence.dod.source } : { dodSource: 'skipped or not run' }),
    criteriaChecks: [...evidence.criteriaChecks],
    diff: evidence.facts.diff,
    workerSummary: evidence.run?.finalMessage ?? undefined,
  };
}

export class MetaAgentPortAdapter implements MetaAgentPort {
  constructor(private readonly agent: MetaAgent) {}

  async plan(input: Parameters<MetaAgentPort['plan']>[0]): Promise<{ plan: Plan; usage: Usage }> {
    const result = await this.agent.plan(
      input.prd,
      {
        taskId: input.taskId,
        memory: input.memory.map(({ title, summary }) => ({ title, summary })),
        ...(input.decisions ? { decisions: input.decisions } : {}),
        ...(input.followup ? { followup: input.followup } : {}),
      },
      { signal: input.signal },
    );
    const plan: Plan = {
      title: titleOf(input.prd, input.taskId),
      acceptanceCriteria: result.message.payload.acceptance_criteria,
    };
    return { plan, usage: result.usage };
  }

  async nextAction(view: MetaView, signal?: AbortSignal): Promise<{ decision: MetaDecision; usage: Usage }> {
    const result = await this.agent.nextAction(this.context(view), { signal });
    const payload = result.message.payload;
    const decision: MetaDecision = {
      action: payload.decision.action,
      reason: payload.decision.reason,
      usedPatterns: payload.used_patterns,
      ...(payload.worker_call
        ? {
            workerCall: {
              workerType: payload.worker_call.worker_type,
              mode: payload.worker_call.mode,
              prompt: payload.worker_call.prompt,
            },
          }
        : {}),
      ...(payload.question ? { question: payload.question } : {}),
    };
    return { decision, usage: result.usage };
  }

  async assess(
    view: MetaView,
    evidence: AssessmentEvidence,
    signal?: AbortSignal,
  ): Promise<{ assessment: Assessment; usage: Usage }> {
    const result = await this.agent.assess(this.context(view), evidenceForMeta(evidence), { signal });
    const payload = result.message.payload;
    return {
      assessment: {
        allCriteriaSatisfied: payload.all_criteria_satisfied,
        summary: payload.summary,
        byCriterion: payload.by_criterion,
        retrospective: payload.retrospective,
      },
      usage: result.usage,
    };
  }

  private context(view: MetaView): LoopContext {
    const last = view.history.at(-1);
    const latest: AssessmentEvidence | undefined =
      view.latest ??
      (last?.facts
        ? {
            run: last,
            facts: last.facts,
            dod: last.dod,
            criteriaChecks: last.criteriaChecks ?? [],
            checkedHead: last.checkedHead ?? null,
          }
        : undefined);
    const lastFacts: FactsForAssessment | undefined = latest
      ? evidenceForMeta(latest, view.feedback)
      : view.feedback.length
        ? {
            summary: view.feedback.map((item) => `Note from the runner: ${item}`).join(' '),
            dodResults: [],
            diff: '',
          }
        : undefined;
    return {
      taskId: view.taskId,
      prd: view.prd,
      acceptanceCriteria: [...view.plan.acceptanceCriteria],
      history: view.history.map(toHistoryEntry),
      patterns: [...view.patterns],
      memory: view.memory.map(({ title, summary }) => ({ title, summary })),
      ...(view.decisions ? { decisions: view.decisions } : {}),
      ...(lastFacts ? { lastFacts } : {}),
      canResume: view.history.some((run) => run.threadId !== null),
      ...(view.followup ? { followup: view.followup } : {}),
    };
  }
}
