/**
 * The scope as words for the worker's prompt. It describes limits the sandbox already enforces; the text
 * is a courtesy so the worker does not waste turns discovering them.
 */
import { STATE_DIR_NAME } from '../layout.js';
import type { Scope } from './scope.js';

function list(patterns: readonly string[]): string {
  return patterns.map((pattern) => `\`${pattern}\``).join(', ');
}

/** A short Markdown paragraph stating what the worker may change. */
export function scopeStatement(scope: Scope): string {
  const lines = ['Scope of this task (enforced by the sandbox, not only by this text):'];
  lines.push(
    scope.write.length > 0
      ? `- You may change only paths matching: ${list(scope.write)}.`
      : '- You may change any file of the repository except the ones listed below.',
  );
  if (scope.read.length > 0) {
    lines.push(`- Read-only (present, but writing fails): ${list(scope.read)}.`);
  }
  if (scope.write.length > 0) lines.push('- Every other file is read-only.');
  if (scope.exclude.length > 0) {
    lines.push(
      `- Not present in the sandbox at all (do not create them either): ${list(scope.exclude)}. ` +
        'If the work needs them, say so instead of inventing their content.',
    );
  }
  lines.push(
    `- \`${STATE_DIR_NAME}/\` belongs to agent-runner: never create, change or delete anything there.`,
  );
  lines.push(
    '- Any file created, changed or deleted outside the writable paths, committed or not, is reported as a ' +
      'scope violation and blocks completion.',
    '- Commit your work on the current branch; only that branch is brought back.',
  );
  return lines.join('\n');
}
