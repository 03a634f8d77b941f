import { describe, expect, it } from 'vitest';
import type { SandboxRuntime, SandboxSummary } from '../../src/core/ports.js';
import {
  findDeadOwnerSandboxes,
  findOrphanSandboxes,
  keptSandboxLabels,
} from '../../src/lifecycle/orphan-sandboxes.js';

/** Lists a fixed set of containers, like the engine would (an honest fake of the port's list). */
function runtimeWith(containers: SandboxSummary[]): SandboxRuntime {
  return { list: async () => containers } as unknown as SandboxRuntime;
}

// A pid far above pid_max on this kind of machine: no such process.
const DEAD_PID = '4194000';
const container = (name: string, labels: Record<string, string>): SandboxSummary => ({
  id: `id-${name}`,
  name,
  state: 'running',
  labels: {
    'agent-runner.task': name,
    'agent-runner.repo': '/repo',
    'agent-runner.pid': DEAD_PID,
    'agent-runner.hostname': 'this-host',
    ...labels,
  },
});

describe('orphan sweep and kept sandboxes', () => {
  it('a container kept with --keep-sandbox is not an orphan, even when its runner is gone', async () => {
    const runtime = runtimeWith([
      container('crashed', {}),
      container('kept', keptSandboxLabels(true)),
      container('alive', { 'agent-runner.pid': String(process.pid) }),
    ]);
    const found = await findDeadOwnerSandboxes(runtime, { repoRoot: '/repo', hostname: 'this-host' });
    expect(found.orphans.map((sandbox) => sandbox.name)).toEqual(['crashed']);
    expect(found.kept.map((sandbox) => sandbox.name)).toEqual(['kept']);
    const orphans = await findOrphanSandboxes(runtime, { repoRoot: '/repo', hostname: 'this-host' });
    expect(orphans.map((sandbox) => sandbox.name)).toEqual(['crashed']);
  });

  it('labels a kept sandbox and nothing else', () => {
    expect(keptSandboxLabels(true)).toEqual({ 'agent-runner.keep': 'true' });
    expect(keptSandboxLabels(false)).toEqual({});
  });
});
