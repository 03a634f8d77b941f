import { describe, expect, it } from 'vitest';
import { formatStatusTable } from '../../src/cli/status-command.js';
import type { SandboxRuntime, SandboxSummary } from '../../src/core/ports.js';
import { findDeadOwnerSandboxes } from '../../src/lifecycle/orphan-sandboxes.js';
import type { TaskEntry } from '../../src/lifecycle/task-inventory.js';

const DEAD_PID = 2 ** 22 + 12345; // above pid_max's default: no such process

function summary(name: string, labels: Record<string, string>): SandboxSummary {
  return {
    id: name,
    name,
    state: 'running',
    labels: {
      'agent-runner.task': name,
      'agent-runner.repo': '/repo',
      'agent-runner.pid': String(DEAD_PID),
      'agent-runner.hostname': 'this-host',
      ...labels,
    },
  };
}

/** Only list() is asked by the sweep; the rest of the port is not reached. */
const runtime = {
  list: async () => [summary('orphan', {}), summary('kept', { 'agent-runner.keep': 'true' })],
} as unknown as SandboxRuntime;

describe('kept sandboxes', () => {
  it("a run's sweep leaves a kept container alone (it is told apart from the orphans)", async () => {
    const dead = await findDeadOwnerSandboxes(runtime, { repoRoot: '/repo', hostname: 'this-host' });
    expect(dead.orphans.map((sandbox) => sandbox.name)).toEqual(['orphan']);
    expect(dead.kept.map((sandbox) => sandbox.name)).toEqual(['kept']);
    expect(dead.kept[0]?.kept).toBe(true);
  });

  it('status shows kept containers and keeps every cell on one line', async () => {
    const [kept] = (await findDeadOwnerSandboxes(runtime, { hostname: 'this-host' })).kept;
    const task: TaskEntry = {
      taskId: 'rp-1',
      status: 'finished',
      state: 'FAILED',
      reason: 'sandbox.setup command `npm ci` exited 1\nnpm ERR! code EUSAGE\n| a pipe',
      lock: null,
      createdAt: '2026-01-01T00:00:00Z',
      lastEventAt: '2026-01-01T00:00:00Z',
      branch: 'agent-runner/rp-1',
      worktreePath: null,
      sandboxRepoPath: null,
      containers: kept ? [kept] : [],
      journal: null,
    };
    const lines = formatStatusTable([task]);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe(
      'Kept containers (--keep-sandbox): later runs leave them; remove them with `agent-runner gc`.',
    );
    // The reason's first line: a set-up failure's further lines are its output tail, shown in the note.
    expect(lines[1]).toContain('sandbox.setup command `npm ci` exited 1 ');
    expect(lines[1]).not.toContain('EUSAGE');
    expect(lines[1]).toContain('kept running (kept)');
  });
});
