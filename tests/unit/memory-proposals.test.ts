import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { UserError } from '../../src/errors.js';
import { readMemoryDir } from '../../src/memory/memory-store.js';
import {
  PROPOSALS_FILE,
  decisionsOffered,
  parseProposalId,
  readAllProposals,
  recordProposals,
} from '../../src/memory/memory-proposals.js';
import { decideProposal } from '../../src/memory/proposal-decision.js';
import { DECISION_LIMITS, completionAssessmentPayloadSchema } from '../../src/protocol/messages.js';

const base = {
  all_criteria_satisfied: true,
  summary: 'done',
  by_criterion: [{ id: 'AC-1', status: 'passed', comment: 'npm test' }],
};
const decision = (title = 'Queue on PostgreSQL', text = 'Jobs go through pg-boss; no Redis.') => ({
  title,
  text,
});

function tempRepo(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'memory-proposals-'));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, stdio: 'pipe' });
  git('init', '--quiet', '--initial-branch=main');
  git('config', 'user.email', 't@example.com');
  git('config', 'user.name', 'T');
  git('commit', '--quiet', '--allow-empty', '-m', 'base');
  return root;
}

const runDirOf = (root: string, taskId: string) => path.join(root, '.agent-runner', 'runs', taskId);
const now = new Date('2026-11-28T10:00:00.000Z');

describe('the assessment names decisions within bounds', () => {
  it('accepts none (the default) and up to the bounds', () => {
    expect(completionAssessmentPayloadSchema.parse(base).decisions).toEqual([]);
    const full = Array.from({ length: DECISION_LIMITS.count }, (_, index) =>
      decision(`${'t'.repeat(DECISION_LIMITS.title - 2)}${index}.`, 'x'.repeat(DECISION_LIMITS.text)),
    );
    expect(completionAssessmentPayloadSchema.parse({ ...base, decisions: full }).decisions).toHaveLength(5);
  });

  it.each([
    ['six decisions', { decisions: Array.from({ length: 6 }, () => decision()) }, 'decisions'],
    ['a title over 120 characters', { decisions: [decision('t'.repeat(121))] }, 'decisions.0.title'],
    ['a text over 2,000 characters', { decisions: [decision('T', 'x'.repeat(2001))] }, 'decisions.0.text'],
    ['a title of two lines', { decisions: [decision('one\ntwo')] }, 'decisions.0.title'],
    ['an empty text', { decisions: [decision('T', '  ')] }, 'decisions.0.text'],
    ['another field', { decisions: [{ ...decision(), status: 'active' }] }, 'decisions.0'],
  ])('refuses %s', (_name, extra, where) => {
    const parsed = completionAssessmentPayloadSchema.safeParse({ ...base, ...extra });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.path.join('.'))).toContain(where);
  });
});

describe('the proposal store', () => {
  it("offers the last assessment's decisions of a COMPLETE task only", () => {
    const runs = [
      { assessment: { decisions: [decision('old')] } },
      {},
      { assessment: { decisions: [decision()] } },
      {},
    ];
    expect(decisionsOffered({ state: 'COMPLETE', runs })).toEqual([decision()]);
    for (const state of ['FAILED', 'NEEDS_REVIEW']) expect(decisionsOffered({ state, runs })).toEqual([]);
  });

  it('numbers proposals stably across follow-ups, proposes none twice, redacts, and lists every task', async () => {
    const root = tempRepo();
    const redact = (text: string) => text.replace('sk-secret', '[REDACTED]');
    expect(await recordProposals(runDirOf(root, 'B-2'), 'B-2', [decision('Later')], { now })).toEqual([
      'B-2#1',
    ]);
    expect(
      await recordProposals(runDirOf(root, 'A-1'), 'A-1', [decision(), decision('Key', 'use sk-secret')], {
        now,
        redact,
      }),
    ).toEqual(['A-1#1', 'A-1#2']);
    // A follow-up of A-1 proposes one again and one new: only the new one is added, as #3.
    expect(
      await recordProposals(runDirOf(root, 'A-1'), 'A-1', [decision(), decision('New')], { now }),
    ).toEqual(['A-1#3']);
    const { proposals, problems } = await readAllProposals(path.join(root, '.agent-runner', 'runs'));
    expect(problems).toEqual([]);
    expect(proposals.map((proposal) => proposal.id)).toEqual(['A-1#1', 'A-1#2', 'A-1#3', 'B-2#1']);
    expect(proposals[1]?.text).toBe('use [REDACTED]');
    expect(proposals.every((proposal) => proposal.status === 'pending')).toBe(true);
  });

  it('names a proposals file it cannot read and never follows a link in its place', async () => {
    const root = tempRepo();
    const outside = path.join(root, 'outside.json');
    writeFileSync(outside, JSON.stringify({ version: 1, taskId: 'L-1', proposals: [] }));
    mkdirSync(runDirOf(root, 'L-1'), { recursive: true });
    symlinkSync(outside, path.join(runDirOf(root, 'L-1'), PROPOSALS_FILE));
    const { proposals, problems } = await readAllProposals(path.join(root, '.agent-runner', 'runs'));
    expect(proposals).toEqual([]);
    expect(problems.join('\n')).toMatch(/ELOOP|symbolic link/);
  });

  it.each([
    ['A-1#1', true],
    ['A-1#0', false],
    ['A-1', false],
    ['../x#1', false],
    ['A-1#1#2', false],
  ])('parses the id %s: %s', (id, valid) => expect(parseProposalId(id) !== null).toBe(valid));
});

describe('a person decides a proposal', () => {
  it('accept writes exactly one active entry (source: the task) and marks it; twice is refused', async () => {
    const root = tempRepo();
    await recordProposals(runDirOf(root, 'A-1'), 'A-1', [decision(), decision('Other')], { now });
    const place = { repoRoot: root, memoryDir: '.agent-runner/memory' };
    const outcome = await decideProposal(place, 'A-1#1', { status: 'accepted', by: 'cli', now });
    expect(outcome).toEqual({
      id: 'A-1#1',
      status: 'accepted',
      entry: '.agent-runner/memory/0001-queue-on-postgresql.md',
    });
    expect(readdirSync(path.join(root, '.agent-runner', 'memory'))).toEqual(['0001-queue-on-postgresql.md']);
    const { entries } = await readMemoryDir(root, place.memoryDir);
    expect(entries).toEqual([
      expect.objectContaining({
        title: 'Queue on PostgreSQL',
        status: 'active',
        source: 'task A-1',
        body: decision().text,
      }),
    ]);
    const again = decideProposal(place, 'A-1#1', { status: 'rejected', by: 'cli', now });
    await expect(again).rejects.toThrow(/was accepted already \(\.agent-runner\/memory\/0001/);
    const { proposals } = await readAllProposals(path.join(root, '.agent-runner', 'runs'));
    expect(proposals.map((proposal) => proposal.status)).toEqual(['accepted', 'pending']);
  });

  it('reject writes no entry; an unknown id is a usage error (exit 2) and changes nothing', async () => {
    const root = tempRepo();
    await recordProposals(runDirOf(root, 'A-1'), 'A-1', [decision()], { now });
    const place = { repoRoot: root, memoryDir: '.agent-runner/memory' };
    expect(await decideProposal(place, 'A-1#1', { status: 'rejected', by: 'ana', now })).toEqual({
      id: 'A-1#1',
      status: 'rejected',
    });
    expect(existsSync(path.join(root, '.agent-runner', 'memory'))).toBe(false);
    const before = readFileSync(path.join(runDirOf(root, 'A-1'), PROPOSALS_FILE), 'utf8');
    for (const id of ['A-1#9', 'Z-9#1', 'nonsense']) {
      const error = await decideProposal(place, id, { status: 'accepted', by: 'cli', now }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(UserError);
      expect((error as UserError).exitCode).toBe(2);
      expect((error as UserError).message).toContain('`agent-runner memory proposals` lists them');
    }
    expect(readFileSync(path.join(runDirOf(root, 'A-1'), PROPOSALS_FILE), 'utf8')).toBe(before);
    expect(JSON.parse(before).proposals[0]).toMatchObject({ status: 'rejected', decidedBy: 'ana' });
  });
});
