import { execFileSync } from 'node:child_process';
import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { rewriteWorkerFiles, takeWorkerFile } from '../../src/sandbox/worker-files.js';

function dirs(): { dir: string; outside: string } {
  const base = mkdtempSync(path.join(tmpdir(), 'ar-worker-files-'));
  onTestFinished(() => rmSync(base, { recursive: true, force: true }));
  const dir = path.join(base, 'home');
  const outside = path.join(base, 'outside');
  mkdirSync(dir);
  mkdirSync(outside);
  writeFileSync(path.join(outside, 'secret.txt'), 'HOST sk-outside000000000000000000\n');
  return { dir, outside };
}

const redact = (text: string) => text.replace(/sk-[a-z0-9]{16,}/g, '[REDACTED]');

describe('worker-writable files', () => {
  it('reads and removes a regular last-message file', async () => {
    const { dir } = dirs();
    writeFileSync(path.join(dir, 'last.txt'), 'done\n');
    expect(await takeWorkerFile(dir, 'last.txt')).toBe('done\n');
    expect(await takeWorkerFile(dir, 'last.txt')).toBeNull();
  });

  it('refuses a symlink, a FIFO (without blocking), a hardlink, an oversized file and a symlinked directory', async () => {
    const { dir, outside } = dirs();
    symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'link.txt'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    writeFileSync(path.join(dir, 'a.txt'), 'a');
    linkSync(path.join(dir, 'a.txt'), path.join(dir, 'b.txt'));
    writeFileSync(path.join(dir, 'big.txt'), 'x'.repeat(2048));
    symlinkSync(outside, path.join(dir, 'sub'));
    expect(await takeWorkerFile(dir, 'link.txt')).toBeNull();
    expect(await takeWorkerFile(dir, 'fifo')).toBeNull();
    expect(await takeWorkerFile(dir, 'b.txt')).toBeNull();
    expect(await takeWorkerFile(dir, 'big.txt', { maxBytes: 1024 })).toBeNull();
    expect(await takeWorkerFile(path.join(dir, 'sub'), 'secret.txt')).toBeNull();
    expect(await takeWorkerFile(dir, '../outside/secret.txt')).toBeNull();
    // The planted link went; its target stayed.
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toContain('HOST');
  });

  it('redacts regular files in place, replaces hardlinked ones, and never follows links', async () => {
    const { dir, outside } = dirs();
    mkdirSync(path.join(dir, 'sessions'));
    writeFileSync(path.join(dir, 'sessions', 'rollout.jsonl'), '{"out":"sk-inside0000000000000000"}\n');
    writeFileSync(path.join(dir, 'pair-a'), 'sk-paired000000000000000000\n');
    linkSync(path.join(dir, 'pair-a'), path.join(dir, 'pair-b'));
    symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'link.txt'));
    symlinkSync(outside, path.join(dir, 'linked-dir'));
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    const report = await rewriteWorkerFiles(dir, redact);
    expect(readFileSync(path.join(dir, 'sessions', 'rollout.jsonl'), 'utf8')).toBe('{"out":"[REDACTED]"}\n');
    expect(readFileSync(path.join(dir, 'pair-a'), 'utf8')).toBe('[REDACTED]\n');
    expect(readFileSync(path.join(dir, 'pair-b'), 'utf8')).toBe('[REDACTED]\n');
    expect(statSync(path.join(dir, 'pair-a')).nlink).toBe(1);
    expect(readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe(
      'HOST sk-outside000000000000000000\n',
    );
    expect(report.refused.map((entry) => entry.path).sort()).toEqual(['fifo', 'link.txt', 'linked-dir']);
  });
});
