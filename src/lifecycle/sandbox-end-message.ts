/**
 * What to tell the person when a task's container is no longer running: pure, from what the engine recorded
 * (src/sandbox/container-end.ts). A container stopped by a signal (docker kill/stop, the engine going down)
 * is told apart from one that ran out of memory and from one that died by itself: under runsc that is gVisor's
 * sandbox ending (its Sentry's own exit status, 2 for a Go panic), which only that task's sandbox suffers.
 */
import type { SandboxEnd } from '../core/ports.js';

/** Exit statuses of a container whose init was ended by SIGKILL or SIGTERM (128 + the signal). */
const SIGNALLED = new Set([137, 143]);

/** The message of the `sandbox_failed` error for a sandbox found not running (`end` null: removed). */
export function sandboxEndMessage(taskId: string, end: SandboxEnd | null): string {
  const resume = `Run \`agent-runner resume ${taskId}\` to continue in a new sandbox`;
  const kept = `the worker's commits are on the task branch and its uncommitted files in .agent-runner/sandboxes/${taskId}/repo.`;
  if (end === null)
    return `The sandbox container of task ${taskId} was removed from outside agent-runner (docker rm, or the engine restarted) while the task ran. ${resume}; ${kept}`;
  const known = end.exitCode >= 0;
  const recorded = known
    ? `${end.state}, exit status ${end.exitCode}, runtime ${end.runtime}${end.error ? `, engine error: ${oneLine(end.error)}` : ''}`
    : end.state;
  if (end.oomKilled)
    return (
      `The sandbox container of task ${taskId} ran out of memory and the kernel ended it (${recorded}). ` +
      `Raise sandbox.memory, then ${resume.charAt(0).toLowerCase()}${resume.slice(1)}; ${kept}`
    );
  if (!known || SIGNALLED.has(end.exitCode) || end.state !== 'exited')
    return (
      `The sandbox container of task ${taskId} was stopped (${recorded}) from outside agent-runner ` +
      `(docker kill/stop/rm, or the engine restarted) while the task ran. ${resume}; ${kept}`
    );
  if (end.runtime === 'runsc')
    return (
      `The sandbox container of task ${taskId} died by itself (${recorded}): gVisor's sandbox ended while the task ran, ` +
      `which no one outside asked for (a fault of runsc, possibly caused by what the worker ran; only this task's sandbox is affected). ` +
      `${resume} (\`--runtime runc\` runs it on the host's kernel instead); ${kept}`
    );
  return (
    `The sandbox container of task ${taskId} died by itself (${recorded}): its init ended while the task ran, which no one outside asked for. ` +
    `${resume}; ${kept}`
  );
}

/** Engine errors can span lines; the message keeps one, bounded. */
function oneLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
