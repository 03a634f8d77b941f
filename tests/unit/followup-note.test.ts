/**
 * What a follow-up leaves for people: the note's "Follow-up N" section (the instruction quoted and inert, the
 * follow-up's own commits, how the plan was revised, the criteria before and after, the spending before) and
 * the journal's record of it, both redacted.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TaskRecord } from '../../src/core/task-runner.js';
import type { CriterionEvidence } from '../../src/core/types.js';
import { ZERO_USAGE } from '../../src/core/usage.js';
import { summaryOf } from '../../src/core/task-record.js';
import { changeRequestBody } from '../../src/deliver/change-request-body.js';
import { EventJournal } from '../../src/notes/event-journal.js';
import { renderTaskNote } from '../../src/notes/note-writer.js';
import { liveMarkdown } from '../support/markdown-live.js';

const SECRET = 'sk-live-followup-0123456789';
const redact = (text: string) => text.split(SECRET).join('[REDACTED]');
const INSTRUCTION = [
  `Also handle empty input. My key is ${SECRET}.`,
  '```',
  '## Follow-up 2',
  'See [this](https://evil.example) and ping @admin.',
  // What a review comment can carry beyond markup: a NUL, half a surrogate pair, a bidi override, a terminal escape.
  'A NUL \0 here, half a pair \ud800 there, \u202e reversed, \x1b[2J cleared.',
].join('\n');

/** True when `text` carries none of the raw bytes above: no NUL, no lone surrogate, no bidi override or escape. */
function cleanText(text: string): boolean {
  // eslint-disable-next-line no-control-regex -- a probe for raw control characters
  return !/[\0\u202e\x1b]/.test(text) && Buffer.from(text, 'utf8').toString('utf8') === text;
}

const evidence = (id: string, description: string, status: 'passed' | 'failed'): CriterionEvidence => ({
  id,
  description,
  type: 'functional',
  critical: true,
  check: { kind: 'command', command: `check-${id}` },
  status,
  comment: '',
  checkResult: {
    criterionId: id,
    critical: true,
    kind: 'command',
    target: `check-${id}`,
    status,
    exitCode: status === 'passed' ? 0 : 1,
    durationMs: 1,
    outputTail: '',
    reason: '',
    ranOnDirtyTree: false,
  },
});

function followedUp(): TaskRecord {
  const usage = { ...ZERO_USAGE, inputTokens: 500, outputTokens: 50, costUsd: 0.01 };
  const facts = {
    baseSha: 'base0000000000',
    headSha: 'ccccccccccccccc',
    commits: [
      { sha: 'ccccccccccccccc', subject: 'Handle empty input' },
      { sha: 'bbbbbbbbbbbbbbb', subject: 'Add slugify' },
    ],
    dirty: false,
    uncommitted: [],
    changedFiles: ['slug.js'],
    diffStat: '',
    diff: '',
    scopeViolations: [],
  };
  const run = (index: number) => ({
    index,
    decision: { action: 'run_worker' as const, reason: 'go', usedPatterns: [] },
    startedAt: 0,
    durationMs: 1000,
    mode: 'exec' as const,
    exitCode: 0,
    timedOut: false,
    failed: false,
    threadId: 't',
    commands: [],
    finalMessage: null,
    errors: [],
    usage,
    refusals: [],
  });
  return {
    taskId: 'T-9',
    prd: '# Slugify',
    state: 'COMPLETE',
    reason: 'both hold',
    plan: {
      title: 'Add slugify',
      acceptanceCriteria: [
        { id: 'AC-1', description: 'slugify works', type: 'functional', critical: true },
        { id: 'AC-2', description: 'empty input gives ""', type: 'functional', critical: true },
      ],
    },
    task: {
      branch: 'agent-runner/T-9',
      baseSha: 'base0000000000',
      worktreePath: '/r/wt',
      dirtyStart: false,
      scopeStatement: '',
    },
    runs: [run(1), { ...run(2), facts }],
    metaCalls: 3,
    usage: { meta: usage, worker: usage, total: usage },
    startedAt: 0,
    finishedAt: 5000,
    question: null,
    preservedRef: null,
    workerType: 'codex',
    runDir: '/r/.agent-runner/runs/T-9',
    error: null,
    basis: [],
    criteria: [
      evidence('AC-1', 'slugify works', 'passed'),
      evidence('AC-2', 'empty input gives ""', 'passed'),
    ],
    followup: {
      number: 1,
      instruction: INSTRUCTION,
      fromSha: 'bbbbbbbbbbbbbbb',
      before: [evidence('AC-1', 'slugify works', 'passed')],
      changes: { added: ['AC-2'], revised: [], protected: [{ id: 'AC-1', why: 'changed' }], carried: [] },
      earlier: {
        runs: 1,
        metaCalls: 4,
        usage: { meta: usage, worker: usage, total: { ...usage, inputTokens: 1000, outputTokens: 100 } },
      },
    },
  };
}

describe("a follow-up's note and journal", () => {
  it('the note has a Follow-up section: the instruction fenced and redacted, its own commits, both tables', async () => {
    const note = await renderTaskNote(followedUp(), {
      repository: '/r',
      prdPath: 'PRD.md',
      workerModel: 'm',
      redact,
    });
    // The probe sees the secret and the markup in the raw instruction...
    expect(INSTRUCTION).toContain(SECRET);
    expect(INSTRUCTION).toMatch(/^## Follow-up 2$/m);
    expect(cleanText(INSTRUCTION)).toBe(false);
    // ...and the note has neither the secret nor a live heading, link or mention from it, nor a raw control.
    expect(note).not.toContain(SECRET);
    expect(cleanText(note)).toBe(true);
    expect(note).toContain('My key is [REDACTED].');
    const live = liveMarkdown(note);
    expect(live.filter((line) => line.startsWith('## Follow-up'))).toEqual(['## Follow-up 1']);
    expect(live.join('\n')).not.toMatch(/Follow-up 2|evil\.example|@admin/);
    // (the instruction is in the note, inside its fence)
    expect(note).toContain('See [this](https://evil.example) and ping @admin.');
    const section = note.slice(note.indexOf('## Follow-up 1'), note.indexOf('## Evidence'));
    // The follow-up's own commit only (the first run's is before `fromSha`).
    expect(section).toMatch(
      /Commits of this follow-up \(after `bbbbbbbbbb`\):\n- `cccccccccc` Handle empty input\n\n/,
    );
    expect(section).toContain(
      '- AC-1 held before and was kept as it was: the revised plan changed it, and a follow-up cannot remove or weaken a criterion that held',
    );
    expect(section).toContain('- added: AC-2');
    const before = section.slice(
      section.indexOf('Before the follow-up'),
      section.indexOf('After the follow-up'),
    );
    const after = section.slice(section.indexOf('After the follow-up'));
    expect(before.match(/^\| AC-\d/gm)).toEqual(['| AC-1']);
    expect(after.match(/^\| AC-\d/gm)).toEqual(['| AC-1', '| AC-2']);
    expect(note).toMatch(
      /\| Follow-up \| 1: its own budget; .* Before it: 1 worker runs, 4 Meta-agent calls, 1100 tokens, \$0\.0100 \|/,
    );
  });

  it("the pull request's body tells the follow-up: the instruction fenced and redacted, the merge, the spending before", () => {
    const record = followedUp();
    const summary = summaryOf(record, { notePath: null, exitCode: 0, headSha: 'ccccccccccccccc' });
    const body = changeRequestBody({ summary, runs: record.runs, baseline: null }, redact);
    expect(body).not.toContain(SECRET);
    expect(cleanText(body)).toBe(true);
    expect(body).toContain('## Follow-up 1');
    expect(body).toContain('My key is [REDACTED].');
    const live = liveMarkdown(body).join('\n');
    expect(live).not.toMatch(/Follow-up 2|evil\.example|@admin/);
    expect(body).toContain('- added: AC-2');
    expect(body).toMatch(/Before this follow-up: 1 worker runs, 4 Meta-agent calls/);
    // A first run's body has no such section.
    const { followup: _followup, ...first } = record;
    const plain = changeRequestBody(
      {
        summary: summaryOf(first, { notePath: null, exitCode: 0, headSha: 'c' }),
        runs: record.runs,
        baseline: null,
      },
      redact,
    );
    expect(plain).not.toContain('Follow-up');
  });

  it("the journal's followup_started keeps the instruction redacted", () => {
    const runDir = mkdtempSync(path.join(tmpdir(), 'ar-followup-journal-'));
    onTestFinished(() => rmSync(runDir, { recursive: true, force: true }));
    const journal = new EventJournal(runDir, (json) => redact(json));
    const record = followedUp();
    const followup = record.followup!;
    journal.append({
      type: 'followup_started',
      number: followup.number,
      instruction: followup.instruction,
      fromSha: followup.fromSha,
      before: followup.before,
      earlier: followup.earlier,
      at: '2026-11-28T10:00:00.000Z',
    });
    const text = readFileSync(path.join(runDir, 'events.jsonl'), 'utf8');
    expect(text).toContain('followup_started');
    expect(text).toContain('My key is [REDACTED].');
    expect(text).not.toContain(SECRET);
  });
});
