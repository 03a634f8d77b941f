/**
 * Startup files the worker can write (~/.bash_profile, ~/.profile, ~/.bashrc, ~/.npmrc) must not run in, or
 * change, the DoD checks. The DoD here fails for real (exit 3); a planted profile that ran would make it pass.
 * Canary: the worker's own login shell does read the planted profile, so the probe can see it working.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { journalEvents } from '../support/faults-harness.js';
import { HOSTILE_YAML, runHostileTask } from '../support/hostile-worker.js';

interface DodEvent {
  type: 'dod';
  dod: {
    status: string;
    results: { name: string; status: string; exitCode: number | null; outputTail: string }[];
  };
}

describe('startup files planted for the DoD', () => {
  it('a forged profile, .bashrc and .npmrc neither run in nor change the DoD', async () => {
    const taskId = `sec-proc-profile-${randomUUID().slice(0, 6)}`;
    const mark = `PROFILE-RAN-${randomUUID().slice(0, 8)}`;
    const yaml = `${HOSTILE_YAML}dod:\n  checks:\n    - name: gate\n      command: echo "home=$HOME"; test -z "$BASH_ENV"; exit 3\n`;
    const forged = `echo ${mark}; exit 0`;
    const run = await runHostileTask(taskId, {
      yaml,
      commands: [
        [
          `for f in ~/.bash_profile ~/.bash_login ~/.profile ~/.bashrc; do echo '${forged}' > "$f"; done`,
          `printf 'script-shell=/bin/true\\n' > ~/.npmrc`,
          `echo '${forged}' > /tmp/bash-env.sh; export BASH_ENV=/tmp/bash-env.sh ENV=/tmp/bash-env.sh`,
          'bash -lc true',
        ].join('\n'),
      ],
    });
    expect(run.code, run.stderr).not.toBeNull();
    const events = journalEvents(run.task.root, taskId);
    // Canary: the worker's own login shell ran the forged profile.
    expect(JSON.stringify(events.filter((event) => event.type === 'run_recorded'))).toContain(mark);
    const dod = events.find((event) => event.type === 'dod') as DodEvent | undefined;
    const gate = dod?.dod.results.find((result) => result.name === 'gate');
    expect(gate).toMatchObject({ status: 'failed', exitCode: 3 });
    expect(gate?.outputTail).not.toContain(mark);
    expect(gate?.outputTail).toMatch(/home=\/tmp\/agent-runner-home\.\w+/);
    expect(dod?.dod.status).toBe('failed');
  });
});
