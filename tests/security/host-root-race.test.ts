/**
 * The host's permission pass against a process left in a kept sandbox, as root (the attacked configuration:
 * this suite runs as root). Real codex in the real sandbox runs with `--keep-sandbox`; a process then keeps
 * swapping a file of the kept container's /workspace (setuid, no write bit) for a symlink to a root-owned host
 * canary, and `resume` prepares the workspace again over the same directory.
 *
 * The probe first proves the attack: the pass as it was (a `find` listing, then chmod by path of the listed
 * mode plus the write bit) run against the same swapper makes the host canary setuid. Then `resume` must stop
 * the kept container before its pass (the swapper dies with it), the pass must run (a setuid file the worker
 * left loses the bit), and the canary keeps its mode and owner.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, chownSync, lstatSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { command, labelledContainers, runToEnd, setupFaultTask } from '../support/faults-harness.js';
import { HOSTILE_YAML } from '../support/hostile-worker.js';
import { assessmentReply, decisionReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage } from '../support/scripted-responses-server.js';
import { execAsWorker } from '../support/sandbox-exec.js';
import { listEntries } from '../../src/workspace/scope/permissions.js';

/** A root-owned host file, mode 0644, outside every mount. */
function hostCanary(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-sec-hostrace-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'canary');
  writeFileSync(file, 'root-owned\n');
  chownSync(file, 0, 0);
  chmodSync(file, 0o644);
  return file;
}

const modeOf = (file: string) => statSync(file).mode & 0o7777;

/** The pass as it was: list without following links, then chmod by path (which follows a link swapped in). */
async function oldPathBasedPass(sandboxRepo: string): Promise<void> {
  for (const entry of await listEntries(sandboxRepo)) {
    if (entry.path !== 'race/f' || entry.kind !== 'f') continue;
    try {
      chmodSync(path.join(sandboxRepo, entry.path), (entry.mode & 0o7777) | 0o200);
    } catch {
      // gone meanwhile
    }
  }
}

describe.runIf(process.getuid?.() === 0)(
  'the host pass and a process in a kept sandbox (root runner)',
  () => {
    it('resume stops the kept container before its pass; the host canary never becomes setuid', async () => {
      const taskId = `sec-hostfs-race-${randomUUID().slice(0, 6)}`;
      const canary = hostCanary();
      const task = await setupFaultTask(taskId, HOSTILE_YAML);
      delete task.env.AGENT_RUNNER_NETWORK;
      task.chat.push(
        { reply: planReply(taskId, [{ id: 'AC-1', description: 'The requested change is committed.' }]) },
        { reply: runWorkerReply('Do the requested change and commit it.') },
        { reply: assessmentReply(false, ['AC-1'], 'Not yet.') },
        { reply: decisionReply('abort', 'Stop here; the task is resumed later.') },
      );
      task.responses.enqueue(
        command(
          // A setuid file the pass must strip, and the directory the swapper works in.
          'mkdir -p race && echo tool > race/setuid-tool && chmod 4555 race/setuid-tool && ls -l race',
        ),
        { kind: 'output', items: [assistantMessage('Done.')] },
      );
      const first = await runToEnd(
        ['run', '--prd', 'PRD.md', '--task-id', taskId, '--keep-sandbox', '--json'],
        {
          cwd: task.root,
          env: task.env,
        },
      );
      expect(first.code, first.stderr).toBe(1);
      const [kept] = await labelledContainers(taskId, task.root);
      expect(kept?.State, 'the container is kept, running').toBe('running');
      const container = kept?.Id as string;
      // The worker's uid, as the container records it (execAsWorker enters as it; a plain `docker exec` would
      // enter as the keeper's uid).
      expect(kept?.Labels['agent-runner.user']).toMatch(/^\d+:\d+$/);
      const sandboxRepo = path.join(task.root, '.agent-runner', 'sandboxes', taskId, 'repo');
      expect(lstatSync(path.join(sandboxRepo, 'race', 'setuid-tool')).mode & 0o4000).toBe(0o4000);

      // What a process left in the kept container does: swap a setuid file without its write bit (the pass
      // adds the bit by chmod) for a link to the host canary, as fast as it can. It runs until resume stops
      // the container (or its time limit).
      const swapper = execAsWorker(
        container,
        [
          'bash',
          '-c',
          'cd /workspace/race; exec -a swap-loop bash -c \'while :; do echo x > f.new; chmod 4555 f.new; mv -T f.new f; ln -sfn "$0" l.new; mv -T l.new f; done\' "$0"',
          canary,
        ],
        { timeoutMs: 300_000 },
      );
      const processes = async () => (await execAsWorker(container, ['ps', '-eo', 'args'])).output;
      const started = Date.now() + 20_000;
      while (!(await processes()).includes('swap-loop') && Date.now() < started)
        await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await processes()).toContain('swap-loop');

      // The attack is real: the old path-based pass against this swapper turns the canary setuid-root.
      const deadline = Date.now() + 30_000;
      while ((modeOf(canary) & 0o4000) === 0 && Date.now() < deadline) await oldPathBasedPass(sandboxRepo);
      expect(modeOf(canary), 'the path-based pass never lost the race in 30 s').toBe(0o4755);
      expect(statSync(canary).uid).toBe(0);
      chmodSync(canary, 0o644);
      expect(await processes()).toContain('swap-loop');

      // The defence: resume stops the kept container before it touches the sandbox repository.
      task.chat.push({ reply: decisionReply('abort', 'Enough for this test.') });
      const resumed = await runToEnd(['resume', taskId, '--json', '--max-iterations', '2'], {
        cwd: task.root,
        env: task.env,
      });
      expect(resumed.code, resumed.stderr).not.toBeNull();
      expect(resumed.stderr).toContain(
        `stopped container ${kept?.Names[0]?.replace(/^\//, '')} of task ${taskId}`,
      );
      const after = (await labelledContainers(taskId, task.root)).find((c) => c.Id === container);
      expect(after?.State).toBe('exited');
      // The swapper died with the container, well before its time limit.
      expect((await swapper).timedOut).toBe(false);
      // The pass ran over the same directory: the worker's setuid bit is gone, the write bit added.
      expect(lstatSync(path.join(sandboxRepo, 'race', 'setuid-tool')).mode & 0o7777).toBe(0o755);
      expect(modeOf(canary)).toBe(0o644);
      expect(statSync(canary).uid).toBe(0);
    });
  },
);
