/**
 * Completion you can trust, end to end (real CLI, real git, real Docker, the real codex binary; only the models
 * are scripted): a crash then `resume` completes from the facts in a few calls; a Meta-agent repeating a
 * refused mark_complete stalls; a critical criterion's failing command check blocks COMPLETE; a repository
 * with nothing executable to prove the work ends NEEDS_REVIEW.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { runCliCaptured } from '../support/cli.js';
import {
  COMMIT_SLUG,
  command,
  commandStarted,
  journalEvents,
  labelledContainers,
  readNote,
  runToEnd,
  setupFaultTask,
  startRunner,
  waitForJournalEvent,
} from '../support/faults-harness.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { scriptedModelServers } from '../support/scripted-models.js';
import { codexTurn, commitSlugTurn, scriptedRunEnv } from '../support/demo-task.js';
import { SLUG_BROKEN_JS, SLUG_JS, createNodeRepo, git, writeFileCommand } from '../support/task-repo.js';
import { taskContainers } from '../support/task-containers.js';

const docker = createDockerClient();
const models = scriptedModelServers();

async function run(repoRoot: string, taskId: string, extraEnv: NodeJS.ProcessEnv = {}) {
  onTestFinished(async () => {
    expect(await taskContainers(taskId, repoRoot)).toEqual([]);
  });
  const requestsBefore = models.chat.requests.length;
  const result = await runCliCaptured(['run', '--prd', 'PRD.md', '--task-id', taskId, '--json'], {
    cwd: repoRoot,
    env: scriptedRunEnv(models, 'e2e-completion-key', extraEnv),
  });
  const events = result.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; [key: string]: unknown });
  const summary = events.at(-1) as unknown as {
    state: string;
    reason: string;
    exitCode: number;
    notePath: string;
    basis: string[];
    criteria: { id: string; checkResult: { status: string; exitCode: number | null } | null }[];
  };
  const note = readFileSync(summary.notePath, 'utf8');
  return { result, events, summary, note, metaRequests: models.chat.requests.length - requestsBefore };
}

describe('completion you can trust (end to end)', () => {
  it("a critical criterion's failing command check blocks COMPLETE despite a passing DoD and a satisfied assessment", async () => {
    const id = 'cmp-critical-check';
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    models.chat.push(
      {
        reply: planReply(id, [
          { id: 'AC-1', description: 'slugify works', critical: false },
          {
            id: 'AC-2',
            description: 'the slug CLI prints the slug',
            critical: true,
            check: { kind: 'command', command: 'node slug-cli.js "Hello World"' },
          },
        ]),
      },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(true, ['AC-1', 'AC-2'], 'Everything is done.') },
      { reply: decisionReply('abort', 'The CLI is out of scope after all.') },
    );
    models.responses.enqueue(...commitSlugTurn());
    const { summary, events, note } = await run(repo.root, id);
    expect(summary.state).toBe('FAILED');
    // The DoD passed and the assessment was satisfied: only the check's own result stood in the way.
    const dod = events.find((event) => event.type === 'dod') as unknown as { dod: { status: string } };
    expect(dod.dod.status).toBe('passed');
    const assessment = events.find((event) => event.type === 'assessment') as unknown as {
      assessment: { allCriteriaSatisfied: boolean };
    };
    expect(assessment.assessment.allCriteriaSatisfied).toBe(true);
    const refusals = events
      .filter((event) => event.type === 'refused')
      .flatMap((event) => event.reasons as string[]);
    expect(refusals).toContain(
      'critical criterion AC-2: its check command `node slug-cli.js "Hello World"` failed, exit 1',
    );
    expect(summary.criteria.find((criterion) => criterion.id === 'AC-2')?.checkResult).toMatchObject({
      status: 'failed',
      exitCode: 1,
    });
    // The note shows the check, its exit code and its output.
    expect(note).toContain(
      '| AC-2 | the slug CLI prints the slug | functional | yes | `command: node slug-cli.js "Hello World"` | ❌ failed (exit 1) |',
    );
    expect(note).toMatch(/<details><summary>AC-2 check `node slug-cli.js "Hello World"`: failed, exit 1/);
    expect(note).toContain("Cannot find module '/workspace/slug-cli.js'");
  });

  it('a Meta-agent repeating a refused mark_complete ends NEEDS_REVIEW (stalled) after limits.maxStalls calls', async () => {
    const id = 'cmp-stalled';
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    const markComplete = { reply: decisionReply('mark_complete', 'The worker says it is done.') };
    models.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify strips accents', critical: true }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
      { reply: assessmentReply(false, ['AC-1'], 'Accents are not handled.') },
      markComplete,
      markComplete,
      markComplete,
    );
    // The DoD's test runner prints in colour (a bold red line for sure, and node's spec reporter with
    // FORCE_COLOR), and the worker commits a broken slugify: the evidence a person reads must carry the
    // test counts and the cause, and no ESC byte.
    writeFileSync(
      path.join(repo.root, 'agent-runner.yaml'),
      [
        'dod:',
        '  checks:',
        '    - name: test',
        // A folded scalar: YAML keeps the backslashes for printf, which writes the ESC bytes.
        '      command: >-',
        "        printf '\\033[1;31mrunning the tests\\033[0m\\n' && FORCE_COLOR=1 node --test --test-reporter=spec",
        '',
      ].join('\n'),
    );
    git(repo.root, 'add', '-A');
    git(repo.root, 'commit', '-q', '-m', 'coloured DoD');
    models.responses.enqueue(...commitSlugTurn(SLUG_BROKEN_JS));
    const { result, summary, metaRequests, note, events } = await run(repo.root, id);
    expect(result.exitCode).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.reason).toMatch(/^stalled: the Meta-agent decided mark_complete 3 times in a row/);
    // The check really ran and failed on the broken code, and its output was really coloured (the ESC the
    // printf wrote is gone from what was recorded, its words are there).
    const dod = events.find((event) => event.type === 'dod') as unknown as {
      dod: { results: { outputTail: string; tests?: unknown }[] };
    };
    expect(dod.dod.results[0]?.outputTail).toContain('running the tests');
    expect(dod.dod.results[0]?.outputTail).not.toContain('\u001b');
    expect(dod.dod.results[0]?.tests).toEqual({ passed: 0, failed: 1, skipped: 0 });
    expect(note).not.toContain('\u001b');
    expect(note).not.toContain('\\x1b');
    expect(note).toContain('| test | `printf');
    expect(note).toContain('❌ failed (exit 1; 0 passed, 1 failed)');
    expect(note).toMatch(
      /\| Root cause \| DoD check test \(`printf .*\) failed \(exit 1; 0 passed, 1 failed\): AssertionError/,
    );
    expect(
      (summary as unknown as { rootCause: { check: string; exitCode: number } }).rootCause,
    ).toMatchObject({
      check: 'DoD check test',
      exitCode: 1,
    });
    // One Meta-agent call per refusal (the unchanged evidence is not assessed again), nothing past the third.
    expect(metaRequests).toBe(6);
    expect(models.chat.remaining()).toBe(0);
    expect(note).toContain('stalled');
  });

  it('a repository with no detectable DoD and no executable check ends NEEDS_REVIEW, not COMPLETE', async () => {
    const id = 'cmp-no-evidence';
    const root = mkdtempSync(path.join(tmpdir(), 'ar-e2e-bare-'));
    onTestFinished(() => rmSync(root, { recursive: true, force: true }));
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'config', 'user.name', 'Test User');
    git(root, 'config', 'user.email', 'test@example.com');
    writeFileSync(path.join(root, 'README.md'), '# notes\n');
    writeFileSync(path.join(root, 'PRD.md'), '# Add a changelog\n\nAdd CHANGELOG.md with one entry.\n');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'initial');
    models.chat.push(
      {
        reply: planReply(id, [
          { id: 'AC-1', description: 'CHANGELOG.md reads well', critical: true, check: { kind: 'manual' } },
        ]),
      },
      { reply: runWorkerReply('Add CHANGELOG.md with one entry and commit.') },
      { reply: assessmentReply(true, ['AC-1'], 'The changelog is there.') },
    );
    models.responses.enqueue(
      ...codexTurn(
        [
          "printf '# Changelog\\n- first\\n' > CHANGELOG.md && git add -A && git commit -q -m 'Add changelog'",
        ],
        'Done.',
      ),
    );
    const { result, summary, note } = await run(root, id);
    expect(result.exitCode).toBe(3);
    expect(summary.state).toBe('NEEDS_REVIEW');
    expect(summary.reason).toMatch(/^no executable evidence/);
    expect(summary.basis).toContain('Executable evidence: none.');
    expect(note).toContain('## Decision');
    expect(note).toContain(
      '| AC-1 | CHANGELOG.md reads well | functional | yes | `manual: manual` | ➖ not_executed |',
    );
    expect(git(root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add changelog');
  });

  it('SIGKILL mid-run, then resume: COMPLETE from the facts with at most 3 Meta-agent calls after the resume', async () => {
    const id = 'cmp-kill9';
    const task = await setupFaultTask(id);
    task.chat.push(
      {
        reply: planReply(id, [
          {
            id: 'AC-1',
            description: 'slugify works',
            critical: true,
            check: { kind: 'test', test_name: 'slugify joins lower-case words with -' },
          },
        ]),
      },
      { reply: runWorkerReply('Implement slugify with a test, commit it, then run the long check.') },
    );
    task.responses.enqueue(command(COMMIT_SLUG), command('sleep 600'));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], {
      cwd: task.root,
      env: task.env,
    });
    await waitForJournalEvent(task.root, id, commandStarted('sleep 600'), runner);
    runner.child.kill('SIGKILL');
    expect((await runner.exited).signal).toBe('SIGKILL');
    expect(await labelledContainers(id, task.root)).toHaveLength(1);

    const before = task.chat.requests.length;
    task.chat.push(
      { reply: decisionReply('mark_complete', 'slugify is committed; the facts should show it.') },
      { reply: assessmentReply(true, ['AC-1'], 'slugify is committed and its test passes.') },
    );
    const resumed = await runToEnd(['resume', id, '--json'], { cwd: task.root, env: task.env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = JSON.parse(resumed.stdout.trim().split('\n').at(-1) ?? '{}') as unknown as {
      state: string;
      basis: string[];
    };
    expect(summary.state).toBe('COMPLETE');
    expect(task.chat.requests.length - before).toBeLessThanOrEqual(3);
    // The facts of the work already there were observed before the first decision after the resume.
    const events = journalEvents(task.root, id);
    const resumedAt = events.findLastIndex((event) => event.type === 'task_started');
    const firstFacts = events.findIndex((event, index) => index > resumedAt && event.type === 'facts');
    const firstDecision = events.findIndex((event, index) => index > resumedAt && event.type === 'decision');
    expect(firstFacts).toBeGreaterThan(resumedAt);
    expect(firstFacts).toBeLessThan(firstDecision);
    // The named test ran through node --test and is part of the evidence.
    expect(summary.basis.join('\n')).toMatch(/AC-1 test check/);
    expect(readNote(task.root, id)).toContain('| **State** | **COMPLETE**');
    expect(git(task.root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add slugify');
    expect(await labelledContainers(id, task.root)).toEqual([]);
  });
});

describe('interrupts and kept sandboxes', () => {
  it('the next run leaves a --keep-sandbox container alone and says so', async () => {
    const id = 'cmp-kept';
    const next = 'cmp-kept-next';
    const task = await setupFaultTask(id);
    onTestFinished(async () => {
      for (const container of await labelledContainers(id, task.root))
        await docker.getContainer(container.Id).remove({ force: true });
    });
    task.chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works', critical: true }]) },
      { reply: decisionReply('abort', 'Stop; the container is what we want to look at.') },
    );
    const kept = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', id, '--keep-sandbox'], {
      cwd: task.root,
      env: task.env,
    });
    expect(kept.code).toBe(1);
    const containers = await labelledContainers(id, task.root);
    expect(containers).toHaveLength(1);
    expect(containers[0]?.Labels['agent-runner.keep']).toBe('true');
    // The runner that made it is gone now: an orphan by pid, but kept on purpose.
    task.chat.push(
      { reply: planReply(next, [{ id: 'AC-1', description: 'slugify works', critical: true }]) },
      { reply: decisionReply('abort', 'Nothing to do.') },
    );
    const second = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', next], {
      cwd: task.root,
      env: task.env,
    });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(
      `left container ${containers[0]?.Names[0]?.replace(/^\//, '')} of task ${id} alone: it was kept with --keep-sandbox`,
    );
    expect(await labelledContainers(id, task.root)).toHaveLength(1);
    expect(await labelledContainers(next, task.root)).toEqual([]);
  });
});

describe('a generated npm project with a lockfile and a devDependency', () => {
  it('sandbox.setup runs a real npm ci; DoD and the named mocha test are the evidence → COMPLETE', async () => {
    const id = 'cmp-npm-mocha';
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    const pkg = {
      name: 'slug-mocha',
      version: '1.0.0',
      private: true,
      scripts: { test: 'mocha' },
      devDependencies: { mocha: '10.8.2' },
    };
    writeFileSync(path.join(repo.root, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
    writeFileSync(path.join(repo.root, '.gitignore'), 'node_modules/\n');
    writeFileSync(
      path.join(repo.root, 'agent-runner.yaml'),
      'sandbox:\n  setup:\n    - npm ci --no-audit --no-fund --cache /tmp/npm-cache\n',
    );
    execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: repo.root,
      stdio: 'ignore',
    });
    git(repo.root, 'add', '-A');
    git(repo.root, 'commit', '-q', '-m', 'mocha project');
    const mochaTest = `const assert = require('node:assert');
const { slugify } = require('../slug.js');
describe('slugify', () => {
  it('joins lower-case words with -', () => {
    assert.strictEqual(slugify('Hello Big World'), 'hello-big-world');
  });
});
`;
    models.chat.push(
      {
        reply: planReply(id, [
          {
            id: 'AC-1',
            description: 'slugify joins lower-case words with -',
            critical: true,
            check: { kind: 'test', file: 'test/slug.test.js', test_name: 'joins lower-case words with -' },
          },
        ]),
      },
      { reply: runWorkerReply('Implement slugify with a mocha test in test/slug.test.js and commit.') },
      {
        reply: assessmentReply(true, ['AC-1'], 'slugify and its mocha test are committed; npm test passes.'),
      },
    );
    models.responses.enqueue(
      ...codexTurn(
        [
          `${writeFileCommand('slug.js', SLUG_JS)}\nmkdir -p test\n${writeFileCommand('test/slug.test.js', mochaTest)}`,
          "git add slug.js test && git commit -q -m 'Add slugify'",
        ],
        'Committed.',
      ),
    );
    const { summary, events, note } = await run(repo.root, id);
    expect(summary.state, note).toBe('COMPLETE');
    const dod = events.find((event) => event.type === 'dod') as unknown as {
      dod: { results: { name: string; status: string }[] };
    };
    expect(dod.dod.results).toEqual([expect.objectContaining({ name: 'test', status: 'passed' })]);
    const checks = events.find((event) => event.type === 'criteria_checks') as unknown as {
      results: { status: string; target: string; reason: string }[];
    };
    expect(checks.results[0]).toMatchObject({ status: 'passed', reason: '1 test(s) passed (mocha)' });
    expect(checks.results[0]?.target).toContain('node_modules/.bin/mocha');
  });
});
