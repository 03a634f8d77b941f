/**
 * Preflight: the program a check starts, read from its command, and a task whose check's program is missing
 * ending at once (exit 4), before any worker run (honest fakes of the ports; the lookup in a real sandbox is
 * tests/e2e/preflight.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { StampedEvent } from '../../src/core/events.js';
import { TaskRunner } from '../../src/core/task-runner.js';
import { firstProgram } from '../../src/workspace/checks/preflight.js';
import {
  FakeWorker,
  ScriptedMetaAgent,
  SLUGIFY_PLAN,
  fakeRepo,
  runWorkerStep,
  testRunnerDeps,
  testRunnerOptions,
} from '../support/core-fakes.js';

describe('firstProgram', () => {
  it.each([
    ['go test ./...', 'go'],
    ['  npm test', 'npm'],
    ['CI=1 NODE_ENV=test npm run lint', 'npm'],
    ['env -i PATH=/usr/bin FOO=1 cargo test', 'cargo'],
    ['python3 -m pytest', 'python3'],
    ['cd packages/a && npm test', 'cd'],
    ['./scripts/check.sh', null],
    ['node_modules/.bin/vitest run', null],
    ['(cd a && make)', null],
    ['"$HOME/bin/x"', null],
    ['$TOOL run', null],
    ['', null],
  ])('%j → %j', (command, program) => {
    expect(firstProgram(command)).toBe(program);
  });
});

describe('preflight in the loop', () => {
  it("a DoD check's program missing from the sandbox ends the task at once: FAILED, exit 4, no worker run", async () => {
    const repo = fakeRepo();
    repo.missingPrograms = ['npm'];
    const events: StampedEvent[] = [];
    const worker = new FakeWorker(repo, []);
    const summary = await new TaskRunner(
      await testRunnerOptions(),
      testRunnerDeps(
        repo,
        { meta: new ScriptedMetaAgent([{ kind: 'plan', plan: SLUGIFY_PLAN }, runWorkerStep()]), worker },
        { events },
      ),
    ).run();
    expect(summary.state).toBe('FAILED');
    expect(summary.exitCode).toBe(4);
    expect(summary.reason).toContain(
      'preflight: `npm` not found in the sandbox, which DoD check test (`npm test`) runs',
    );
    expect(summary.reason).toContain('no worker ran');
    expect(worker.requests).toHaveLength(0);
    expect(events.some((event) => event.type === 'baseline')).toBe(false);
  });

  it("a criterion's command check whose program is missing ends the task after the plan, before any worker run", async () => {
    const repo = fakeRepo();
    repo.missingPrograms = ['pytest'];
    const worker = new FakeWorker(repo, []);
    const plan = {
      ...SLUGIFY_PLAN,
      acceptanceCriteria: [
        {
          ...SLUGIFY_PLAN.acceptanceCriteria[0]!,
          check: { kind: 'command' as const, command: 'pytest -q tests/test_slug.py' },
        },
      ],
    };
    const summary = await new TaskRunner(
      await testRunnerOptions(),
      testRunnerDeps(repo, {
        meta: new ScriptedMetaAgent([{ kind: 'plan', plan }, runWorkerStep()]),
        worker,
      }),
    ).run();
    expect(summary.exitCode).toBe(4);
    expect(summary.reason).toContain("criterion AC1's command check (`pytest -q tests/test_slug.py`)");
    expect(worker.requests).toHaveLength(0);
  });
});
