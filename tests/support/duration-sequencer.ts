/**
 * Orders the suite's files longest first within each `sequence.groupOrder`, whatever their project, from the
 * durations a clean-clone run measured (`tests/file-durations.json`, written by `scripts/test-durations.mjs`).
 *
 * Why: with two workers the suite ends when its last file does. vitest's own order (project by project, each
 * by its cached duration, else by file size) has no cache in a clean clone, so a long e2e file could start
 * last and run alone at the end. Longest first across projects keeps both workers busy to the end. A file
 * missing from the table (new since it was measured) counts as long, so it never starts last.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds assumed for a file the table does not know yet. */
const UNKNOWN_FILE_SECONDS = 120;

function readDurations(root: string): Record<string, number> {
  try {
    return JSON.parse(readFileSync(path.join(root, 'tests', 'file-durations.json'), 'utf8')) as Record<
      string,
      number
    >;
  } catch {
    return {};
  }
}

export class DurationSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const durations = readDurations(root);
    const seconds = (file: TestSpecification) =>
      durations[path.relative(root, file.moduleId).split(path.sep).join('/')] ?? UNKNOWN_FILE_SECONDS;
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        seconds(b) - seconds(a) ||
        a.moduleId.localeCompare(b.moduleId),
    );
  }
}
