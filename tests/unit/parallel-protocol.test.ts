import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findCycles, parsePlanAnswer } from '../../src/protocol/decomposition.js';
import { formatProtocolIssue } from '../../src/protocol/protocol-issue.js';
import { parseReview } from '../../src/protocol/review.js';
import type { ProtocolIssue } from '../../src/protocol/protocol-issue.js';

/** `path: message`, without the line and column (asserted elsewhere). */
const plain = (issue: ProtocolIssue) => formatProtocolIssue(issue).replace(/ \(line \d+, column \d+\)/, '');

const examples = path.resolve(import.meta.dirname, '../../protocols/parallel');

function subtask(id: string, extra: string[] = [], blockedBy = '[]', write = '\n      - src/' + id + '/**') {
  return [
    `    - id: ${id}`,
    `      title: Subtask ${id}`,
    '      prd: Do it.',
    '      acceptance_criteria:',
    '        - id: AC-1',
    '          description: It holds.',
    '          type: functional',
    '          critical: true',
    `      write_scope:${write}`,
    `      blocked_by: ${blockedBy}`,
    ...extra,
  ].join('\n');
}

function plan(...subtasks: string[]) {
  return ['type: plan_task', 'version: 1', 'payload:', '  task_id: T-1', '  subtasks:', ...subtasks].join(
    '\n',
  );
}

function issuesOf(reply: string, allowSubtasks = true): string[] {
  const result = parsePlanAnswer(reply, { taskId: 'T-1', allowSubtasks });
  return result.ok ? [] : result.issues.map(plain);
}

describe('protocols/parallel examples', () => {
  it('the decomposition example is a valid plan_task answer with three subtasks', () => {
    const text = readFileSync(path.join(examples, 'plan_task-decomposition.yaml'), 'utf8');
    const result = parsePlanAnswer(text, { taskId: 'SHOP-CHECKOUT', allowSubtasks: true });
    expect(result.ok ? 'valid' : result.issues.map(plain)).toBe('valid');
    if (result.ok && 'subtasks' in result.message.payload)
      expect(result.message.payload.subtasks.map((entry) => [entry.id, entry.blocked_by])).toEqual([
        ['api', []],
        ['ui', []],
        ['docs', ['api', 'ui']],
      ]);
    else throw new Error('expected subtasks');
  });

  it('the review example is a valid review', () => {
    const text = readFileSync(path.join(examples, 'review.yaml'), 'utf8');
    const result = parseReview(text, 'SHOP-CHECKOUT--api');
    expect(result.ok ? result.message.payload.verdict : result.issues.map(plain)).toBe('ng');
  });
});

describe('plan_task answers', () => {
  it('still accepts acceptance criteria for one task', () => {
    const reply = [
      'type: plan_task',
      'version: 1',
      'payload:',
      '  task_id: T-1',
      '  acceptance_criteria:',
      '    - id: AC-1',
      '      description: It holds.',
      '      type: functional',
      '      critical: true',
    ].join('\n');
    const result = parsePlanAnswer(reply, { taskId: 'T-1', allowSubtasks: true });
    expect(result.ok && 'acceptance_criteria' in result.message.payload).toBe(true);
  });

  it('accepts a valid graph', () => {
    expect(issuesOf(plan(subtask('a'), subtask('b'), subtask('c', [], '[a, b]')))).toEqual([]);
    // Ids near the reserved ones are fine.
    expect(issuesOf(plan(subtask('integrations'), subtask('check'), subtask('api-rest')))).toEqual([]);
  });

  it.each([
    [
      'an unknown blocker',
      plan(subtask('a'), subtask('b', [], '[zz]')),
      'payload.subtasks[1].blocked_by[0]: unknown subtask `zz`',
    ],
    [
      'a subtask waiting for itself',
      plan(subtask('a'), subtask('b', [], '[b]')),
      'payload.subtasks[1].blocked_by[0]: a subtask cannot wait for itself',
    ],
    [
      'a cycle',
      plan(subtask('a', [], '[c]'), subtask('b', [], '[a]'), subtask('c', [], '[b]')),
      'payload.subtasks[0].blocked_by: dependency cycle a → c → b → a',
    ],
    ['a duplicate id', plan(subtask('a'), subtask('a')), 'payload.subtasks[1].id: duplicate subtask id `a`'],
    [
      'an empty write scope',
      plan(subtask('a'), subtask('b', [], '[]', ' []')),
      'payload.subtasks[1].write_scope: give at least one glob',
    ],
    [
      'a missing write scope',
      plan(subtask('a'), subtask('b', [], '[]', ' ""').replace('      write_scope: ""\n', '')),
      'payload.subtasks[1].write_scope: required',
    ],
    [
      'a scope leaving the repository',
      plan(subtask('a'), subtask('b', [], '[]', '\n      - ../x/**')),
      'payload.subtasks[1].write_scope[0]: must stay inside the repository',
    ],
    ['one subtask only', plan(subtask('a')), 'payload.subtasks: a decomposition has at least 2 subtasks'],
    ...['integration', 'check-2', 'fixup-1', 'api-r2'].map((id) => [
      `the reserved id ${id}`,
      plan(subtask('a'), subtask(id)),
      "payload.subtasks[1].id: this id is reserved (integration, check-N, fixup-N and ids ending in -rN name the project's own entries)",
    ]),
  ])('refuses %s with a dotted path', (_name, reply, expected) => {
    const issues = issuesOf(reply);
    expect(
      issues.some((issue) => issue.includes(expected)),
      issues.join('\n'),
    ).toBe(true);
  });

  it('refuses subtasks when splitting is not allowed, with the fix', () => {
    const issues = issuesOf(plan(subtask('a'), subtask('b')), false);
    expect(issues).toEqual([
      expect.stringContaining('payload.subtasks: this task must not be split; remove `subtasks`'),
    ]);
  });

  it('refuses a decomposition for another task id', () => {
    const issues = issuesOf(plan(subtask('a'), subtask('b')).replace('task_id: T-1', 'task_id: T-2'));
    expect(issues).toEqual([expect.stringContaining('payload.task_id: is `T-2` but the task id is `T-1`')]);
  });
});

describe('findCycles', () => {
  it.each([
    [[{ id: 'a', blocked_by: [] }], []],
    [
      [
        { id: 'a', blocked_by: ['b'] },
        { id: 'b', blocked_by: ['a'] },
      ],
      [['a', 'b', 'a']],
    ],
    [
      [
        { id: 'a', blocked_by: ['b'] },
        { id: 'b', blocked_by: [] },
        { id: 'c', blocked_by: ['a', 'b'] },
      ],
      [],
    ],
  ])('%j → %j', (graph, cycles) => {
    expect(findCycles(graph)).toEqual(cycles);
  });
});

describe('review', () => {
  const review = (verdict: string, findings: string) =>
    [
      'type: review',
      'version: 1',
      'payload:',
      '  task_id: T-1--a',
      `  verdict: ${verdict}`,
      '  summary: Looked.',
      findings,
    ].join('\n');

  it('accepts ok without findings', () => {
    const result = parseReview(review('ok', '  findings: []'), 'T-1--a');
    expect(result.ok && result.message.payload.verdict).toBe('ok');
  });

  it('refuses ng without findings', () => {
    const result = parseReview(review('ng', '  findings: []'), 'T-1--a');
    expect(result.ok ? [] : result.issues.map(plain)).toEqual([
      expect.stringContaining('payload.findings: give at least one finding'),
    ]);
  });

  it('refuses an unknown severity with its path', () => {
    const result = parseReview(
      review(
        'ng',
        '  findings:\n    - file: a.js\n      line: 3\n      severity: awful\n      message: Bad.',
      ),
      'T-1--a',
    );
    expect(result.ok ? [] : result.issues.map(plain)).toEqual([
      expect.stringContaining('payload.findings[0].severity'),
    ]);
  });
});
