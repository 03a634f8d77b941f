/**
 * The journal is read back through the same schemas its events are typed from: everything written comes back
 * whole, and a damaged line stops `resume` with one clear error instead of rebuilding a wrong state.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runnerEventSchema, stampedEventSchema, type StampedEvent } from '../../src/core/events.js';
import { TaskRunner } from '../../src/core/task-runner.js';
import type { Plan } from '../../src/core/types.js';
import { listTasks } from '../../src/lifecycle/task-inventory.js';
import { readTaskJournal } from '../../src/lifecycle/task-journal-state.js';
import { EventJournal, JournalInvalidError, readJournal } from '../../src/notes/event-journal.js';
import { workerPromptTemplate } from '../../src/patterns/worker-prompt.js';
import { runCliCaptured } from '../support/cli.js';
import {
  FakeHuman,
  FakeSandboxes,
  FakeWorker,
  FakeWorkspace,
  ManualClock,
  NoMemory,
  ScriptedMetaAgent,
  fakeRepo,
  testRunnerOptions,
} from '../support/core-fakes.js';
import { createNodeRepo } from '../support/task-repo.js';

const plan: Plan = {
  title: 'Add slugify',
  acceptanceCriteria: [
    {
      id: 'AC1',
      description: 'slugify works',
      type: 'functional',
      critical: true,
      check: { kind: 'command', command: 'npm test' },
    },
  ],
};

function tempRunDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-runner-journal-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A whole task (ask, refused run, completed run) written by the real journal, plus the events the loop does not emit itself. */
async function writeJournal(runDir: string): Promise<StampedEvent[]> {
  const journal = new EventJournal(runDir);
  const written: StampedEvent[] = [];
  const record = (event: StampedEvent) => {
    written.push(event);
    journal.append(event);
  };
  const repo = fakeRepo();
  const decide = (action: 'run_worker' | 'ask_human', prompt = 'Implement slugify') => ({
    kind: 'decide' as const,
    decision: {
      action,
      reason: 'next',
      usedPatterns: [],
      ...(action === 'run_worker'
        ? { workerCall: { workerType: 'codex', mode: 'exec' as const, prompt } }
        : { question: 'Which separator?' }),
    },
  });
  const assess = (satisfied: boolean) => ({
    kind: 'assess' as const,
    assessment: {
      allCriteriaSatisfied: satisfied,
      summary: satisfied ? 'done' : 'not yet',
      byCriterion: [
        { id: 'AC1', status: satisfied ? ('passed' as const) : ('failed' as const), comment: '' },
      ],
      retrospective: ['keep it small'],
    },
  });
  const runner = new TaskRunner(
    await testRunnerOptions({
      headless: false,
      runDir,
      startOptions: { prdPath: '/repo/PRD.md', prd: '# Slugify', base: 'main', dodSkipped: false },
      baseline: { mode: 'auto', redBase: 'no_worse' },
    }),
    {
      meta: new ScriptedMetaAgent([
        { kind: 'plan', plan },
        decide('ask_human'),
        decide('run_worker'),
        assess(false),
        decide('run_worker', 'Make the test pass'),
        assess(true),
      ]),
      workspace: new FakeWorkspace(repo),
      sandboxes: new FakeSandboxes(),
      worker: new FakeWorker(repo, [
        (state) => {
          state.commits.push({ sha: 'c1', subject: 'Add slugify' });
        },
        (state) => {
          state.commits.push({ sha: 'c2', subject: 'Fix slugify' });
          state.testsPass = true;
        },
      ]),
      human: new FakeHuman(['a dash']),
      notes: new NoMemory(),
      workerPrompt: workerPromptTemplate,
      clock: new ManualClock(),
      writeNote: async () => ({ path: path.join(runDir, 'task-T-1.md'), sha256: 'digest-of-the-note' }),
      onEvent: record,
    },
  );
  const summary = await runner.run();
  expect(summary.state).toBe('COMPLETE');
  const at = '2026-11-24T10:00:00.000Z';
  record({
    type: 'setup_command',
    index: 1,
    command: 'npm ci',
    policy: 'allowlist',
    phase: 'finished',
    durationMs: 3,
    exitCode: 0,
    at,
  });
  record({
    type: 'gateway_refused',
    refusal: {
      route: 'worker',
      method: 'GET',
      path: '/v1/models',
      status: 403,
      reason: 'route',
      detail: 'not a model call',
    },
    at,
  });
  for (const event of [
    { kind: 'thread_started', threadId: 'th-1' },
    { kind: 'command_started', command: 'npm test' },
    { kind: 'command_finished', command: 'npm test', exitCode: null, status: 'declined' },
    { kind: 'file_changed', path: 'src/slugify.js', change: 'add' },
    { kind: 'message', text: 'Done.' },
    { kind: 'error', message: 'stream ended', fatal: false },
  ] as const)
    record({ type: 'worker_event', run: 1, event, at });
  record({ type: 'worker_events_dropped', run: 1, kept: 2000, dropped: 5, at });
  record({
    type: 'audit',
    actor: { name: 'alice', role: 'operator' },
    action: 'task.answer',
    taskId: 'T-1',
    from: '127.0.0.1',
    status: 202,
    at,
  });
  record({ type: 'stalled', repeats: 3, what: 'the same decision', at });
  record({ type: 'preserved', ref: 'refs/agent-runner/wip/T-1', at });
  // Only in the fleet's database's copy (which a takeover writes as the journal it resumes from).
  record({
    type: 'journal_line_unstored',
    reason: 'the journal line is not UTF-8 (agent-runner writes none such)',
    at,
  });
  record({
    type: 'followup_started',
    number: 1,
    instruction: 'Also handle empty input.',
    fromSha: 'c2',
    before: summary.criteria,
    earlier: { runs: summary.runs, metaCalls: summary.metaCalls, usage: summary.usage },
    at,
  });
  record({
    type: 'followup_planned',
    number: 1,
    changes: { added: ['AC2'], revised: [], protected: [{ id: 'AC1', why: 'changed' }], carried: [] },
    at,
  });
  return written;
}

describe('the journal read back through its schemas', () => {
  it('every event type written comes back whole', async () => {
    const runDir = tempRunDir();
    const written = await writeJournal(runDir);
    const read = readJournal(path.join(runDir, 'events.jsonl'), stampedEventSchema);
    // Equal to what was written, through JSON: no field the schemas do not know is dropped on the way back.
    expect(read).toEqual(JSON.parse(JSON.stringify(written)));
    const types = new Set(read.map((event) => event.type));
    const every = runnerEventSchema.options.map((option) => option.shape.type.value);
    expect([...every].filter((type) => !types.has(type))).toEqual([]);
  });

  it('a wrong field type in the middle of the journal is named: file, line, event type, field', async () => {
    const runDir = tempRunDir();
    await writeJournal(runDir);
    const file = path.join(runDir, 'events.jsonl');
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const index = lines.findIndex((line) => line.includes('"type":"worker_finished"'));
    lines[index] = lines[index]!.replace(/"exitCode":\d+/, '"exitCode":"zero"');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const error = (() => {
      try {
        readTaskJournal(runDir, 'T-1');
      } catch (caught) {
        return caught;
      }
      return null;
    })();
    expect(error).toBeInstanceOf(JournalInvalidError);
    expect((error as JournalInvalidError).line).toBe(index + 1);
    expect((error as JournalInvalidError).message).toMatch(
      new RegExp(`damaged at line ${index + 1} \\(worker_finished\\) exitCode: .*expected number`),
    );
    expect((error as JournalInvalidError).exitCode).toBe(2);
  });

  it('an unknown event type and a line that is not JSON mid-file are damage; a torn last line is a crash', async () => {
    const runDir = tempRunDir();
    await writeJournal(runDir);
    const file = path.join(runDir, 'events.jsonl');
    const intact = readFileSync(file, 'utf8');
    // A crash mid-append leaves a torn last line: skipped, the rest is read.
    appendFileSync(file, '{"type":"worker_started","run":3,"mo');
    expect(readTaskJournal(runDir, 'T-1')?.attempts).toBe(1);
    writeFileSync(file, intact.replace('\n', '\n{"type":"worker_started","run":3,"mo\n'));
    expect(() => readTaskJournal(runDir, 'T-1')).toThrow(/damaged at line 2 \(not a JSON line\)/);
    writeFileSync(file, `${intact}{"type":"sandbox_teleported","at":"2026-11-24T10:00:00.000Z"}\n`);
    expect(() => readTaskJournal(runDir, 'T-1')).toThrow(/\(sandbox_teleported\) type: /);
  });
});

describe('a damaged journal at the command line', () => {
  async function damagedTask() {
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    const runDir = path.join(repo.root, '.agent-runner', 'runs', 'T-1');
    mkdirSync(runDir, { recursive: true });
    await writeJournal(runDir);
    const file = path.join(runDir, 'events.jsonl');
    writeFileSync(file, readFileSync(file, 'utf8').replace('"dirtyStart":false', '"dirtyStart":"no"'));
    return repo.root;
  }

  it('resume refuses it with the line and the field (exit 2), and starts nothing', async () => {
    const root = await damagedTask();
    const result = await runCliCaptured(['resume', 'T-1'], { cwd: root, env: { CI: 'true' } });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/events\.jsonl is damaged at line 2 \(task_started\) dirtyStart: /);
    expect(result.stderr).toContain('agent-runner run --prd FILE');
  });

  it('status still lists the task, with the damage as its reason', async () => {
    const root = await damagedTask();
    const { tasks } = await listTasks(root);
    expect(tasks.find((task) => task.taskId === 'T-1')).toMatchObject({
      status: 'unknown',
      reason: expect.stringMatching(/^journal damaged at line 2 \(task_started\) dirtyStart: /),
    });
  });
});
