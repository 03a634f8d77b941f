/**
 * The swap race against the host's own file walk, without a container in the way: a process keeps replacing a
 * regular file (and a directory) in a worker-writable directory with a symlink to a host file while the host
 * redacts and reads. rewriteWorkerFiles/takeWorkerFile must never write or read through the link. (In a real
 * run no worker process is left when the host walks CODEX_HOME: this is the second line of defence.)
 * The canary: the same walk redacts the regular file when it catches it as a regular file.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { rewriteWorkerFiles, takeWorkerFile } from '../../src/sandbox/worker-files.js';

const SECRET = 'sk-swaprace0000000000000000000000';

function racingDirectory(hostContent: string): {
  dir: string;
  hostFile: string;
  swapperAlive: () => boolean;
} {
  const base = mkdtempSync(path.join(tmpdir(), 'ar-sec-race-'));
  const dir = path.join(base, 'codex-home');
  mkdirSync(dir);
  const hostDir = path.join(base, 'host');
  mkdirSync(hostDir);
  const hostFile = path.join(hostDir, 'host-secret.txt');
  writeFileSync(hostFile, hostContent);
  // Swaps, as fast as a shell can: a regular file ↔ a symlink to the host file, and a directory ↔ a
  // symlink to the host directory (so `sub/host-secret.txt` would be the host file through the link).
  const swapper = spawn(
    'bash',
    [
      '-c',
      `cd "$1"; while :; do
         echo "${SECRET}" > f.new; mv -T f.new swap.txt; ln -sfn "$2" l.new; mv -T l.new swap.txt
         rm -rf d.new; mkdir d.new; echo "${SECRET}" > d.new/host-secret.txt; mv -T d.new sub 2>/dev/null
         ln -sfn "$3" s.new; mv -T s.new sub 2>/dev/null || { rm -rf sub; mv -T s.new sub; }
       done`,
      'swapper',
      dir,
      hostFile,
      hostDir,
    ],
    { stdio: 'ignore', detached: true },
  );
  onTestFinished(async () => {
    const exited =
      swapper.exitCode !== null || swapper.signalCode !== null
        ? Promise.resolve()
        : new Promise((resolve) => swapper.once('exit', resolve));
    // The whole group: a `mv` the loop had started must not recreate files while they are removed.
    try {
      process.kill(-(swapper.pid as number), 'SIGKILL');
    } catch {
      // already gone
    }
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    rmSync(base, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  });
  return { dir, hostFile, swapperAlive: () => swapper.exitCode === null && swapper.signalCode === null };
}

describe('swap races in a worker-writable directory', () => {
  it('the redaction walk never writes through a symlink swapped in between check and use', async () => {
    const { dir, hostFile, swapperAlive } = racingDirectory(`${SECRET}\n`);
    let redactedRegular = 0;
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline) {
      const report = await rewriteWorkerFiles(dir, (text) => text.split(SECRET).join('[REDACTED]'));
      redactedRegular += report.changed;
      expect(readFileSync(hostFile, 'utf8')).toBe(`${SECRET}\n`);
    }
    // The race was real: the swapper ran the whole time.
    expect(swapperAlive()).toBe(true);
    // Canary: the walk did catch and redact regular files during the race.
    expect(redactedRegular).toBeGreaterThan(0);
  });

  it('reading the last-message file never reads a host file through a swapped symlink', async () => {
    const { dir } = racingDirectory('HOST-ONLY\n');
    let readRegular = 0;
    const deadline = Date.now() + 2_000;
    while (Date.now() < deadline) {
      // takeWorkerFile removes what it finds; the swapper puts it back.
      const text = await takeWorkerFile(dir, 'swap.txt');
      if (text !== null) readRegular += 1;
      expect(text === null || text === `${SECRET}\n`).toBe(true);
      const viaDirectory = await takeWorkerFile(path.join(dir, 'sub'), 'host-secret.txt');
      expect(viaDirectory === null || viaDirectory === `${SECRET}\n`).toBe(true);
    }
    expect(readRegular).toBeGreaterThan(0);
  });
});
