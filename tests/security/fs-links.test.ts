/**
 * Symlinks and hardlinks the worker plants in the mounts the host touches, with the real codex binary in the
 * real sandbox: codex's last-message file (its name is in codex's argv, readable in /proc) and the session
 * files the host redacts after each run. The host must never read or write through them.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { hostSecretFile, runHostileTask, whereItLeaked } from '../support/hostile-worker.js';

/** Finds the `-o` path of the running codex in /proc and keeps a symlink to `target` there. */
function plantAtLastMessage(target: string): string {
  return [
    `f=$(for p in /proc/[0-9]*; do tr '\\0' '\\n' < "$p/cmdline" 2>/dev/null; done | grep -m1 -E '^/[a-z-]+/agent-runner-last-message-[0-9a-f-]+[.]txt$')`,
    'echo "last message file: $f"',
    `ln -sfn '${target}' "$f"`,
    // A process that re-plants the link after codex writes its file (it must be gone before the host looks).
    `setsid nohup bash -c 'while :; do ln -sfn "$0" "$1" 2>/dev/null; sleep 0.05; done' '${target}' "$f" >/dev/null 2>&1 &`,
    'ls -l "$f"',
  ].join('\n');
}

describe('symlinks planted where the host reads', () => {
  it("a symlink at codex's last-message path does not make the host read a host file", async () => {
    const secret = `HOST-SECRET-${randomUUID()}`;
    const allowed = `ALLOWED-LAST-MESSAGE-${randomUUID()}`;
    const hostFile = hostSecretFile(`${secret}\n`);
    const run = await runHostileTask(`sec-fs-lastmsg-${randomUUID().slice(0, 6)}`, {
      commands: [plantAtLastMessage(hostFile)],
      finalMessage: allowed,
    });
    // The probe sees the worker's final message where the attack would have put the host file.
    expect(whereItLeaked(run, allowed).some((place) => place.startsWith('meta request'))).toBe(true);
    expect(whereItLeaked(run, secret)).toEqual([]);
    expect(readFileSync(hostFile, 'utf8')).toBe(`${secret}\n`);
  });

  it('a symlink or a swapped file in CODEX_HOME does not make the redaction pass write a host file', async () => {
    // A host file holding a key-shaped value: a redaction pass that followed a link would rewrite it.
    const keyShaped = `sk-${randomUUID().replace(/-/g, '')}`;
    const hostFile = hostSecretFile(`${keyShaped}\n`);
    const inWorkspace = `sk-${randomUUID().replace(/-/g, '')}`;
    const run = await runHostileTask(`sec-fs-redact-${randomUUID().slice(0, 6)}`, {
      commands: [
        [
          // The canary: a key-shaped value in a regular file of CODEX_HOME is redacted by the pass.
          `echo '${inWorkspace}' > /codex-home/canary.txt`,
          `ln -sfn '${hostFile}' /codex-home/link-to-host.txt`,
          `mkdir -p /codex-home/dir && ln -sfn '${hostFile.replace(/\/[^/]+$/, '')}' /codex-home/dir/sub`,
          // Keeps swapping a regular file for a symlink while the host would redact.
          `setsid nohup bash -c 'while :; do echo x > /codex-home/swap.txt; ln -sfn "$0" /codex-home/swap.tmp && mv -T /codex-home/swap.tmp /codex-home/swap.txt; done' '${hostFile}' >/dev/null 2>&1 &`,
          'ls -la /codex-home',
        ].join('\n'),
      ],
    });
    expect(run.code, run.stderr).not.toBeNull();
    const codexHome = `${run.task.root}/.agent-runner/runs/${run.taskId}/codex-home`;
    expect(readFileSync(`${codexHome}/canary.txt`, 'utf8')).toBe('[REDACTED]\n');
    expect(readFileSync(hostFile, 'utf8')).toBe(`${keyShaped}\n`);
  });

  it('hardlinks: none reaches across mounts or to a read-only file, and the redaction pass breaks the rest', async () => {
    const keyShaped = `sk-${randomUUID().replace(/-/g, '')}`;
    const run = await runHostileTask(`sec-fs-hardlink-${randomUUID().slice(0, 6)}`, {
      commands: [
        [
          `echo '${keyShaped}' > /codex-home/linked-a.txt`,
          // Canary: a hardlink inside one mount, of the worker's own file, is possible.
          'ln /codex-home/linked-a.txt /codex-home/linked-b.txt && echo "links: $(stat -c %h /codex-home/linked-a.txt)"',
          // Across mounts (EXDEV) and to a read-only file of another uid (protected_hardlinks): refused.
          'ln /workspace/agent-runner.yaml /codex-home/config-link 2>&1 || echo CROSS-MOUNT-REFUSED',
          'ln /workspace/agent-runner.yaml /workspace/config-link 2>&1 || echo READ-ONLY-LINK-REFUSED',
        ].join('\n'),
      ],
    });
    const codexHome = `${run.task.root}/.agent-runner/runs/${run.taskId}/codex-home`;
    const outputs = JSON.stringify(run.task.responses.responseRequests().map((request) => request.body));
    expect(outputs, run.stderr).toContain('links: 2');
    expect(outputs).toContain('CROSS-MOUNT-REFUSED');
    expect(outputs).toContain('READ-ONLY-LINK-REFUSED');
    // Both names redacted, and no longer one file: the pass replaced rather than wrote through.
    expect(readFileSync(`${codexHome}/linked-a.txt`, 'utf8')).toBe('[REDACTED]\n');
    expect(readFileSync(`${codexHome}/linked-b.txt`, 'utf8')).toBe('[REDACTED]\n');
    expect(statSync(`${codexHome}/linked-a.txt`).nlink).toBe(1);
    expect(readFileSync(`${run.task.root}/agent-runner.yaml`, 'utf8')).not.toContain(keyShaped);
  });
});
