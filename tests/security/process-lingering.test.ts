/**
 * Each worker run owns its processes: whatever it starts (setsid, nohup, env -i, a renamed process) is gone
 * before the runner observes facts or runs the DoD. The probe is a DoD check that lists every process of the
 * sandbox; it first proves it sees processes that are allowed to stay (the sandbox's keeper).
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { journalEvents } from '../support/faults-harness.js';
import { HOSTILE_YAML, runHostileTask } from '../support/hostile-worker.js';

/** Prints one line per process: its argv joined by spaces. */
const LIST_PROCESSES = `for p in /proc/[0-9]*; do tr '\\0' ' ' < "$p/cmdline" 2>/dev/null; echo; done`;

interface DodEvent {
  type: 'dod';
  dod: { results: { name: string; status: string; outputTail: string }[] };
}

describe('processes a worker run leaves behind', () => {
  it('setsid, nohup, env -i and renamed daemons are gone before the DoD runs', async () => {
    const taskId = `sec-proc-linger-${randomUUID().slice(0, 6)}`;
    const yaml = `${HOSTILE_YAML}dod:\n  checks:\n    - name: processes\n      command: ${JSON.stringify(LIST_PROCESSES)}\n`;
    const run = await runHostileTask(taskId, {
      yaml,
      commands: [
        [
          'setsid nohup sleep 4321 >/dev/null 2>&1 &',
          'env -i /usr/bin/setsid /bin/sleep 4322 >/dev/null 2>&1 &',
          'setsid bash -c \'trap "" TERM HUP; exec -a innocent-daemon sleep 4323\' >/dev/null 2>&1 &',
          '(setsid sh -c "sleep 4324 & exit 0" &)',
          // Wait (up to 10 s on a loaded machine) until every daemon is running under its final name.
          `for i in $(seq 100); do [ "$(${LIST_PROCESSES} | grep -cE '^(sleep 432[124]|innocent-daemon 4323) ?$')" -ge 4 ] && break; sleep 0.1; done`,
          `${LIST_PROCESSES} | grep -E '^(sleep|innocent)'`,
        ].join('\n'),
      ],
    });
    expect(run.code, run.stderr).not.toBeNull();
    // The worker's own listing shows its daemons running while it ran.
    const workerListing = JSON.stringify(
      journalEvents(run.task.root, taskId).filter((e) => e.type === 'run_recorded'),
    );
    expect(workerListing).toContain('innocent-daemon 4323');
    const dod = journalEvents(run.task.root, taskId).find((event) => event.type === 'dod') as
      DodEvent | undefined;
    const listing = dod?.dod.results.find((result) => result.name === 'processes')?.outputTail ?? '';
    const lines = listing.split('\n').map((line) => line.trim());
    // Canary: the probe sees the processes that are allowed to stay (the keeper sleeps forever).
    expect(lines).toContain('sleep infinity');
    for (const daemon of ['sleep 4321', 'sleep 4322', 'innocent-daemon 4323', 'sleep 4324']) {
      expect(lines, listing).not.toContain(daemon);
    }
  });
});
