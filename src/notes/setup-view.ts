/**
 * The note's set-up section: the commands that ran, the output of those that failed, and which were detected
 * from the repository (sandbox.setup not set) with the file that decided each.
 */
import { formatDuration } from '../config/units.js';
import type { DetectedCommand } from '../core/detected-command.js';
import type { SetupCommandReport } from '../core/events.js';
import { codeSpan, cutList, htmlText, inlineText, NOTE_LIMITS, outputDetails } from './markdown-text.js';

/** The `sandbox.setup` commands that ran, and the output of those that failed. */
export function setupView(setup: readonly SetupCommandReport[], detected: readonly DetectedCommand[]) {
  const failures = cutList(
    setup.filter((report) => report.exitCode !== 0 && report.outputTail),
    NOTE_LIMITS.outputTails,
    'failed commands',
  );
  const shown = cutList(setup, NOTE_LIMITS.listItems, 'commands');
  const shownDetected = cutList(detected, NOTE_LIMITS.listItems, 'commands');
  return {
    setupDetected: shownDetected.items.map(
      (item) => `${codeSpan(item.command, NOTE_LIMITS.code, 'text')} from ${inlineText(item.detectedFrom)}`,
    ),
    setup: shown.items.map((report) => ({
      index: report.index,
      command: codeSpan(report.command, NOTE_LIMITS.code, 'table'),
      policy: inlineText(report.policy),
      result: report.timedOut ? '⏱️ timed out' : report.exitCode ? `❌ exit ${report.exitCode}` : '✅ exit 0',
      duration: formatDuration(report.durationMs ?? 0),
    })),
    setupCut: shown.notice,
    setupFailures: failures.items.map((report) =>
      outputDetails(htmlText(report.command), report.outputTail ?? ''),
    ),
    setupFailuresCut: failures.notice,
  };
}
