/** Whether a run may be split into subtasks: the one rule `run` and the parallel module both apply. */
import type { TaskSpec } from './task-spec.js';

export interface SplitOptions {
  /** `--single`: never split, whatever `parallel.split` says. */
  single?: boolean;
}

/** `parallel.split: auto` or `always`, no `--single`, a new task, and nothing that needs one task. */
export function maySplit(spec: TaskSpec, options: SplitOptions): boolean {
  const models = spec.models ?? {};
  return (
    spec.config.parallel.split !== 'never' &&
    !options.single &&
    spec.start.kind === 'new' &&
    // One scripted model or one cassette serves one task's calls in order; parallel calls would interleave.
    !models.script &&
    !models.record &&
    !models.replay
  );
}
