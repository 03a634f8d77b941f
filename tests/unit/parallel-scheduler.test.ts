import { describe, expect, it } from 'vitest';
import {
  defaultParallelMax,
  schedule,
  scopeOverlap,
  type SchedulableSubtask,
  type SubtaskState,
} from '../../src/parallel/scheduler.js';

const sub = (id: string, writeScope: string[], blockedBy: string[] = []): SchedulableSubtask => ({
  id,
  writeScope,
  blockedBy,
});

const A = sub('a', ['src/a/**']);
const B = sub('b', ['src/b/**']);
const C = sub('c', ['docs/**'], ['a', 'b']);
const WIDE = sub('wide', ['src/**']);

describe('scopeOverlap', () => {
  it.each([
    [['src/a/**'], ['src/b/**'], [], null],
    [['src/a/**'], ['src/**'], [], 'src/a/x'],
    [['src/**'], ['src/a/**'], [], 'src/a/x'],
    [['README.md'], ['README.md'], [], 'README.md'],
    [['docs/**'], ['docs/guide.md'], [], 'docs/guide.md'],
    [['*.md'], ['docs/**'], ['docs/intro.md', 'src/x.js'], 'docs/intro.md'],
    // Judged on the patterns, not on the files there are: both may write a Markdown file under src/.
    [['*.md'], ['src/**'], ['docs/intro.md', 'src/x.js'], 'src/x.md'],
    [['**/*.md'], ['alpha/**'], ['README.md', 'src/x.js'], 'alpha/x.md'],
    [['/*.md'], ['src/**'], ['docs/intro.md', 'src/x.js'], null],
    [['src/**/*.ts'], ['src/**/*.js'], ['src/a.ts', 'src/b.js'], null],
    [['src/[ab]/**'], ['src/b/index.js'], [], 'src/b/index.js'],
    [['lib/*.js'], ['lib/util.js'], [], 'lib/util.js'],
  ])('%j and %j over %j → %j', (left, right, files, expected) => {
    expect(scopeOverlap(left, right, files)).toBe(expected);
  });

  it('refuses an empty write scope (it would mean everything)', () => {
    expect(() => scopeOverlap([], ['src/**'], [])).toThrow(/non-empty write scope/);
  });
});

describe('schedule', () => {
  const files = ['src/a/index.js', 'src/b/index.js', 'docs/readme.md'];
  type Case = [string, SchedulableSubtask[], Record<string, SubtaskState>, number, string[], string[]];
  it.each<Case>([
    ['two independent start together, the dependent waits', [A, B, C], {}, 4, ['a', 'b'], ['c:blocked']],
    ['capacity 1 starts the first only', [A, B, C], {}, 1, ['a'], ['b:capacity', 'c:blocked']],
    ['the dependent starts when both merged', [A, B, C], { a: 'merged', b: 'merged' }, 4, ['c'], []],
    ['one blocker merged is not enough', [A, B, C], { a: 'merged', b: 'running' }, 4, [], ['c:blocked']],
    ['overlapping scopes never start together', [A, WIDE], {}, 4, ['a'], ['wide:overlap']],
    [
      'an overlap waits until the other merged, not only ran',
      [A, WIDE],
      { a: 'reviewing' },
      4,
      [],
      ['wide:overlap'],
    ],
    ['after the merge the overlapping one starts', [A, WIDE], { a: 'merged' }, 4, ['wide'], []],
    ['a running subtask counts against the limit', [A, B], { a: 'running' }, 1, [], ['b:capacity']],
    ['a failed subtask does not stop an independent one', [A, B], { a: 'failed' }, 4, ['b'], []],
  ])('%s', (_name, subtasks, states, max, start, waits) => {
    const decision = schedule({ subtasks, states, max, baseFiles: files });
    expect(decision.start).toEqual(start);
    expect(decision.waits.map((wait) => `${wait.id}:${wait.kind}`)).toEqual(waits);
  });

  it('says why a subtask waits', () => {
    const decision = schedule({ subtasks: [A, WIDE, C], states: { a: 'running' }, max: 4, baseFiles: files });
    expect(decision.waits.map((wait) => wait.reason)).toEqual([
      'waits for a (running): both write scopes can write a path such as src/a/index.js',
      'waits for a (running) to merge',
    ]);
  });

  it.each<[SubtaskState]>([['failed'], ['skipped']])('skips what waits for a %s subtask', (state) => {
    const decision = schedule({
      subtasks: [A, B, C],
      states: { a: state, b: 'merged' },
      max: 4,
      baseFiles: files,
    });
    expect(decision.skip).toEqual([{ id: 'c', reason: 'it waits for a, which did not complete' }]);
    expect(decision.start).toEqual([]);
  });
});

describe('defaultParallelMax', () => {
  const GB = 1024 ** 3;
  it.each([
    [2, 22 * GB, 4 * GB, 2],
    [16, 64 * GB, 4 * GB, 4],
    [16, 10 * GB, 4 * GB, 2],
    [8, 1 * GB, 4 * GB, 1],
    [1, 64 * GB, 1 * GB, 1],
  ])('%d cores, %d bytes free, sandboxes of %d bytes → %d', (cores, free, sandbox, expected) => {
    expect(defaultParallelMax({ cores, freeMemoryBytes: free, sandboxMemoryBytes: sandbox })).toBe(expected);
  });
});
