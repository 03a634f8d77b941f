/**
 * Host git as a process: its output exactly as git wrote it (UTF-8 across chunk boundaries, the final newline
 * kept), a call that cannot start is a failed call, a git past its time limit is stopped with its process
 * group, and a git whose output passes the cap is stopped rather than read into memory.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { git, HOST_GIT_KILL_GRACE_MS, tryGit } from '../../src/workspace/git/git-command.js';

function repository(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'agent-runner-git-command-'));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  execFileSync('git', ['init', '-q', '-b', 'main', root]);
  return root;
}

/** A blob of `text` in the repository's object store; returns its id. */
function blob(root: string, text: string): string {
  const file = path.join(root, 'blob.txt');
  writeFileSync(file, text);
  return execFileSync('git', ['hash-object', '-w', file], { cwd: root, encoding: 'utf8' }).trim();
}

describe('host git as a process', () => {
  it('gives the output byte for byte: multi-byte characters across chunks, the final newline kept', async () => {
    const root = repository();
    // Well over a pipe's chunk (64 KiB), with a 3-byte character at every offset.
    const text = `${'é€x'.repeat(60_000)}\n`;
    const id = blob(root, text);
    expect(await git(['cat-file', 'blob', id], { cwd: root })).toBe(text);
  });

  it('hands its input to git', async () => {
    const root = repository();
    const id = await git(['hash-object', '-w', '--stdin'], { cwd: root, input: 'from stdin\n' });
    expect(await git(['cat-file', 'blob', id.trim()], { cwd: root })).toBe('from stdin\n');
  });

  it('a git that cannot start (its directory is gone) is a failed call, not an exception', async () => {
    const root = repository();
    const result = await tryGit(['status'], { cwd: path.join(root, 'missing') });
    expect(result.exitCode).not.toBe(0);
  });

  it('stops a git past its time limit, with its whole process group', async () => {
    const root = repository();
    const marker = path.join(root, 'still-running');
    // An alias runs a shell as git's child: the limit must stop the group, not git alone.
    const config = { 'alias.hang': `!sleep 1; touch ${marker}` };
    const exists = () => {
      try {
        execFileSync('test', ['-e', marker]);
        return true;
      } catch {
        return false;
      }
    };
    // The probe first: left alone, the child leaves its marker.
    await tryGit(['hang'], { cwd: root, config });
    expect(exists()).toBe(true);
    rmSync(marker);
    const started = Date.now();
    await expect(tryGit(['hang'], { cwd: root, config, timeoutMs: 200 })).rejects.toThrow(
      /did not finish within 0\.2 s and was stopped/,
    );
    // The call returns once the group is gone: SIGTERM at the limit, SIGKILL after the grace for what is left.
    expect(Date.now() - started).toBeLessThan(HOST_GIT_KILL_GRACE_MS + 1_500);
    // Past the second the child would have slept: it did not leave its marker.
    expect(exists()).toBe(false);
  });

  it('stops a git whose output passes the cap instead of reading it all', async () => {
    const root = repository();
    const id = blob(root, 'x'.repeat(200_000));
    await expect(tryGit(['cat-file', 'blob', id], { cwd: root, maxOutputBytes: 10_000 })).rejects.toThrow(
      /was killed \(SIGTERM\)/,
    );
    // Under the cap the same call succeeds.
    expect((await tryGit(['cat-file', 'blob', id], { cwd: root })).stdout).toHaveLength(200_000);
  });
});
