/**
 * A bare repository as a `file://` remote for tests of what agent-runner pushes (host git and agent-runner's
 * remote parsing both take the URL), and every object it holds as text: what a probe for a leak searches.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';

/** `git ARGS` in `cwd`, its output trimmed. */
export function run(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();
}

/** A directory removed when the test finishes. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A new bare repository, as its `file://` URL. */
export function bareRemote(prefix = 'ar-state-remote-'): string {
  const dir = tempDir(prefix);
  run(dir, 'init', '-q', '--bare');
  return `file://${dir}`;
}

/** Every object of the repository behind a `file://` URL, as text. */
export function allObjects(remote: string): string {
  return execFileSync('git', ['cat-file', '--batch-all-objects', '--batch'], {
    cwd: remote.replace(/^file:\/\//, ''),
    encoding: 'latin1',
    maxBuffer: 256 * 1024 * 1024,
  });
}
