/**
 * Live progress for people: the state, elapsed time, each worker command as it runs, DoD results, and at
 * the end where the note and the branch are. Written to stderr so stdout stays clean for `--json`. Every text
 * from data is clipped to one line here (a worker's newline cannot start a line that looks like the runner's);
 * its terminal controls are shown as escapes where every line is printed (src/cli/output.ts).
 */
import { describePlanChanges } from '../core/followup.js';
import { formatDuration } from '../config/units.js';
import { cutAtWord } from '../core/failure-hints.js';
import { rootCauseLine } from '../core/root-cause.js';
import { checkDetailText } from '../core/test-counts.js';
import { totalTokens } from '../core/usage.js';
import type { StampedEvent } from '../core/events.js';
import type { TaskSummary } from '../core/types.js';
import { comparisonText, redOnBase } from '../core/baseline.js';

/** Data as one line of at most `max` characters, cut at a word (the cut shown as `…`). */
const clip = (text: string, max = 160) => cutAtWord(text.replace(/\s+/g, ' ').trim(), max);

/**
 * A message's first line, whole up to `max` characters (cut at a word): its further lines (a failed
 * command's output) are in the note, which the closing lines point to.
 */
function firstLine(text: string, max: number): string {
  const [first = '', ...rest] = text.trim().split(/\r?\n/);
  const more = rest.some((line) => line.trim() !== '');
  return `${clip(first, max)}${more ? ' (more in the note)' : ''}`;
}

const SETUP_TICK_MS = 15_000;

/** A printer of events as progress lines (set-up commands also tick their elapsed time while they run). */
export function createProgressPrinter(
  write: (line: string) => void,
  startedAt = Date.now(),
): (event: StampedEvent) => void {
  const stamp = (at: string) => {
    const seconds = Math.max(0, Math.round((Date.parse(at) - startedAt) / 1000));
    return `[${String(Math.floor(seconds / 60)).padStart(2, '0')}:${String(seconds % 60).padStart(2, '0')}]`;
  };
  let setupTicker: NodeJS.Timeout | undefined;
  return (event) => {
    const t = stamp(event.at);
    if (event.type === 'task_finished') clearInterval(setupTicker);
    if (event.type !== 'setup_command') {
      writeLoopEvent(write, t, event);
      return;
    }
    clearInterval(setupTicker);
    if (event.phase === 'started') {
      write(`${t} set-up ${event.index}: $ ${clip(event.command, 140)} (${event.policy})`);
      setupTicker = tickSetup(write, event.index);
    } else
      write(
        `${t} set-up ${event.index}: ${event.exitCode === 0 ? '✓' : '✗'} ${event.timedOut ? 'timed out' : `exit ${event.exitCode ?? '?'}`} after ${formatDuration(event.durationMs ?? 0)}`,
      );
  };
}

/** A long install shows it is alive: the elapsed time every 15 s (unref: never holds the exit). */
function tickSetup(write: (line: string) => void, index: number): NodeJS.Timeout {
  const began = Date.now();
  const ticker = setInterval(
    () => write(`        set-up ${index}: running, ${formatDuration(Date.now() - began)}`),
    SETUP_TICK_MS,
  );
  ticker.unref();
  return ticker;
}

/** The lines of the loop's own events: the task, its plan, decisions and assessment (others: writeRunEvent). */
function writeLoopEvent(write: (line: string) => void, t: string, event: StampedEvent): void {
  switch (event.type) {
    case 'task_started':
      write(
        `${t} task ${event.taskId} on branch ${event.branch} (base ${event.baseSha.slice(0, 10)})${event.dirtyStart ? ' — note: your working tree has uncommitted changes; they are not part of the task' : ''}`,
      );
      break;
    case 'transition':
      write(`${t} ${event.to}${event.reason ? `: ${firstLine(event.reason, 300)}` : ''}`);
      break;
    case 'plan':
      write(`${t} plan: ${clip(event.plan.title)}`);
      for (const criterion of event.plan.acceptanceCriteria) {
        write(`        ${criterion.id}${criterion.critical ? '*' : ''} ${clip(criterion.description, 120)}`);
      }
      break;
    case 'decision':
      write(`${t} meta: ${event.decision.action} — ${clip(event.decision.reason)}`);
      break;
    case 'stalled':
      write(`${t} stalled: ${clip(event.what)}`);
      break;
    case 'assessment':
      write(
        `${t} assessment: ${event.assessment.allCriteriaSatisfied ? 'satisfied' : 'not satisfied'} — ${clip(event.assessment.summary)}`,
      );
      break;
    case 'refused':
      for (const reason of event.reasons) write(`${t}   not complete: ${clip(reason)}`);
      break;
    case 'followup_started':
      write(`${t} follow-up ${event.number}: ${clip(event.instruction, 400)}`);
      break;
    case 'followup_planned':
      for (const line of describePlanChanges(event.changes))
        write(`${t}   follow-up ${event.number}, the plan: ${clip(line, 200)}`);
      break;
    case 'human':
      write(
        `${t} question: ${clip(event.question, 400)}${event.answer === null ? ' (no one to answer: headless)' : ` → ${clip(event.answer)}`}`,
      );
      break;
    default:
      writeRunEvent(write, t, event);
      break;
  }
}

/** The lines of a worker run and what it left: commands, facts, DoD, checks, gateway refusals. */
function writeRunEvent(write: (line: string) => void, t: string, event: StampedEvent): void {
  switch (event.type) {
    case 'worker_started':
      write(`${t} worker run ${event.run} (${event.worker ? `${event.worker} ` : ''}${event.mode})`);
      break;
    case 'worker_event': {
      const inner = event.event;
      if (inner.kind === 'command_started') write(`${t}   $ ${clip(inner.command, 140)}`);
      else if (inner.kind === 'command_finished') {
        write(`${t}   ${inner.exitCode === 0 ? '✓' : '✗'} exit ${inner.exitCode ?? '?'} (${inner.status})`);
      } else if (inner.kind === 'file_changed')
        write(`${t}   ~ ${clip(inner.change, 20)} ${clip(inner.path)}`);
      else if (inner.kind === 'error' && inner.fatal) write(`${t}   ! ${clip(inner.message)}`);
      break;
    }
    case 'worker_events_dropped':
      write(
        `${t}   … ${event.dropped} more worker event(s) not recorded (the first ${event.kept} are; all of them are in run-${event.run}/codex.jsonl)`,
      );
      break;
    case 'worker_finished':
      write(
        `${t} worker run ${event.run} ended: exit ${event.exitCode}${event.timedOut ? ' (timed out)' : ''} after ${formatDuration(event.durationMs)}`,
      );
      break;
    case 'facts': {
      const facts = event.facts;
      write(
        `${t} facts: ${facts.commits.length} commit(s) since base, ${facts.dirty ? `${facts.uncommitted.length} uncommitted path(s)` : 'clean'}, ${facts.scopeViolations.length ? `scope violations: ${clip(facts.scopeViolations.join(', '), 300)}` : 'no scope violations'}${facts.problems?.length ? `; INCOMPLETE: ${clip(facts.problems.join('; '), 300)}` : ''}`,
      );
      break;
    }
    case 'dod':
      write(
        `${t} DoD (${event.dod.source}): ${event.dod.results.map((result) => `${result.name} ${result.status}${checkDetailText(result.exitCode || null, result.tests)} ${formatDuration(result.durationMs)}${result.base && result.status !== 'passed' ? ` — ${comparisonText(result)}` : ''}`).join(', ') || 'none'}`,
      );
      break;
    case 'baseline': {
      const red = redOnBase(event);
      write(
        `${t} baseline: the DoD on the base ${event.baseSha.slice(0, 12)} before any change: ${event.dod.results.map((result) => `${result.name} ${result.status}${checkDetailText(result.exitCode || null, result.tests)}`).join(', ')}${red.length > 0 ? ` — red before any change: ${red.join(', ')} (must not get worse)` : ''}`,
      );
      break;
    }
    case 'criteria_checks':
      if (event.results.length > 0)
        write(
          `${t} criteria checks: ${event.results.map((check) => `${check.criterionId} ${check.kind} ${check.status.replace('_', ' ')}${checkDetailText(check.exitCode, check.tests)}`).join(', ')}`,
        );
      break;
    case 'gateway_refused': {
      const refusal = event.refusal;
      write(
        `${t}   gateway refused ${refusal.method} ${clip(refusal.path, 80)} (${refusal.reason}, ${refusal.status}): ${clip(refusal.detail)}`,
      );
      break;
    }
    case 'preserved':
      write(`${t} uncommitted worker changes saved at ${event.ref}`);
      break;
    case 'journal_line_unstored':
      write(
        `${t} a journal line is not in the fleet's database (${clip(event.reason)}): see the node's journal`,
      );
      break;
    case 'audit':
      write(`${t} ${event.action} by ${event.actor.name} (${event.actor.role}) from ${event.from}`);
      break;
    default:
      break;
  }
}

/** The closing lines: state, reason, where things are. */
export function formatSummary(summary: TaskSummary): string[] {
  const lines = [
    `${summary.state} after ${formatDuration(summary.durationMs)}: ${firstLine(summary.reason, 600)}`,
  ];
  // The check the task stopped on, its first error line and the fix: what to look at first.
  if (summary.rootCause) {
    lines.push(`  cause:    ${clip(rootCauseLine(summary.rootCause), 600)}`);
    if (summary.rootCause.hint) lines.push(`  fix:      ${clip(summary.rootCause.hint, 600)}`);
  }
  lines.push(
    `  branch:   ${summary.branch}${summary.headSha ? ` (head ${summary.headSha.slice(0, 12)})` : ''}`,
  );
  if (summary.worktreePath) lines.push(`  worktree: ${summary.worktreePath}`);
  if (summary.notePath) lines.push(`  note:     ${summary.notePath}`);
  lines.push(
    `  usage:    ${summary.runs} worker run(s), ${summary.metaCalls} Meta-agent call(s), ${totalTokens(summary.usage.total)} tokens${summary.usage.total.costUsd > 0 ? `, $${summary.usage.total.costUsd.toFixed(4)}` : ''}`,
  );
  return lines;
}
