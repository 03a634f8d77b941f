/**
 * A hard-capped directory's files outlive its file system: releasing it copies them back into a plain
 * directory at the same path (links as links, FIFOs as FIFOs, owners kept, no set-user-ID bit, zeros as holes)
 * and deletes the image; mounting it again moves the files into a new capped file system sized for them plus
 * the cap. On real loop-mounted ext4 images; needs root and loop devices, skipped with the reason otherwise.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  capImagePath,
  hardCapSupport,
  mountCapVolume,
  mountPoints,
  releaseCapVolume,
  removeCapVolume,
} from '../../src/sandbox/cap-volume.js';

const MiB = 1024 ** 2;
const CAP_VOLUME = path.resolve(import.meta.dirname, '..', '..', 'src', 'sandbox', 'cap-volume.ts');
const support = await hardCapSupport();
const skipReason = support.kind === 'watched' ? support.reason : '';

function loopDevicesOf(image: string): string {
  return execFileSync('losetup', ['-j', image], { encoding: 'utf8' }).trim();
}

/** A capped directory of 8 MiB owned by `uid`, mounted in a temporary directory removed when the test ends. */
async function mountedCap(name: string, uid: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-cap-release-'));
  const mountPath = path.join(dir, name);
  onTestFinished(async () => {
    await removeCapVolume(mountPath);
    rmSync(dir, { recursive: true, force: true });
  });
  const request = { mountPath, capBytes: 8 * MiB, startBytes: 0, startFiles: 0, owner: { uid, gid: uid } };
  expect(await mountCapVolume(request)).toEqual({ kind: 'hard' });
  return { mountPath, request };
}

describe.skipIf(support.kind !== 'hard')(
  `releasing a hard cap keeps its files ${skipReason && `(skipped: ${skipReason})`}`,
  () => {
    it('copies the files out on release and back in on the next mount, where the cap holds again', async () => {
      const { mountPath, request } = await mountedCap('codex-home', 1000);
      const image = capImagePath(mountPath);

      // What a worker leaves: its own files, a link out of the sandbox, a FIFO, a set-user-ID program.
      writeFileSync(path.join(mountPath, 'session.jsonl'), 'kept\n');
      chownSync(path.join(mountPath, 'session.jsonl'), 1000, 1000);
      symlinkSync('/etc/shadow', path.join(mountPath, 'link'));
      execFileSync('mkfifo', [path.join(mountPath, 'pipe')]);
      writeFileSync(path.join(mountPath, 'tool'), '#!/bin/sh\n');
      chownSync(path.join(mountPath, 'tool'), 1000, 1000);
      chmodSync(path.join(mountPath, 'tool'), 0o4755);
      expect(lstatSync(path.join(mountPath, 'tool')).mode & 0o4000).toBe(0o4000);
      // Junk of zeros, the usual filler: it takes its blocks in the image.
      writeFileSync(path.join(mountPath, 'zeros'), Buffer.alloc(4 * MiB));
      expect(lstatSync(path.join(mountPath, 'zeros')).blocks * 512).toBeGreaterThanOrEqual(4 * MiB);

      await releaseCapVolume(mountPath);
      expect(await mountPoints()).not.toContain(mountPath);
      expect(existsSync(image)).toBe(false);
      expect(loopDevicesOf(image)).toBe('');
      expect(readFileSync(path.join(mountPath, 'session.jsonl'), 'utf8')).toBe('kept\n');
      expect(lstatSync(path.join(mountPath, 'session.jsonl')).uid).toBe(1000);
      expect(lstatSync(mountPath).uid).toBe(1000);
      expect(readlinkSync(path.join(mountPath, 'link'))).toBe('/etc/shadow');
      expect(lstatSync(path.join(mountPath, 'pipe')).isFIFO()).toBe(true);
      expect(lstatSync(path.join(mountPath, 'tool')).mode & 0o6000).toBe(0);
      // Same content, no room on the host: runs of zeros became holes.
      expect(lstatSync(path.join(mountPath, 'zeros')).size).toBe(4 * MiB);
      expect(lstatSync(path.join(mountPath, 'zeros')).blocks * 512).toBeLessThan(MiB);

      // The next run: the plain directory is adopted into a new capped file system, files and all.
      expect(await mountCapVolume(request)).toEqual({ kind: 'hard' });
      expect(await mountPoints()).toContain(mountPath);
      expect(existsSync(`${mountPath}.adopt`)).toBe(false);
      expect(readFileSync(path.join(mountPath, 'session.jsonl'), 'utf8')).toBe('kept\n');
      expect(lstatSync(path.join(mountPath, 'session.jsonl')).uid).toBe(1000);
      const past = (() => {
        try {
          execFileSync('fallocate', ['-l', '64M', path.join(mountPath, 'fill')], { stdio: 'pipe' });
          return 'written';
        } catch (error) {
          return String((error as { stderr?: Buffer }).stderr ?? error);
        }
      })();
      expect(past).toMatch(/No space left on device/);

      await releaseCapVolume(mountPath);
      expect(existsSync(image)).toBe(false);
      expect(readFileSync(path.join(mountPath, 'session.jsonl'), 'utf8')).toBe('kept\n');
    });

    it('takes the files out of an image a killed runner left unmounted', async () => {
      const { mountPath } = await mountedCap('repo', 0);
      writeFileSync(path.join(mountPath, 'wip.txt'), 'uncommitted\n');
      execFileSync('umount', ['-l', mountPath]);
      expect(existsSync(path.join(mountPath, 'wip.txt'))).toBe(false);

      await releaseCapVolume(mountPath);
      expect(readFileSync(path.join(mountPath, 'wip.txt'), 'utf8')).toBe('uncommitted\n');
      expect(existsSync(capImagePath(mountPath))).toBe(false);
      expect(await mountPoints()).not.toContain(mountPath);
    });

    it('a process that exits while it unmounts still leaves nothing mounted (its exit hook detaches it)', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ar-cap-exit-'));
      const mountPath = path.join(dir, 'repo');
      onTestFinished(async () => {
        await removeCapVolume(mountPath);
        rmSync(dir, { recursive: true, force: true });
      });
      // As a server stopped by SIGTERM while a finished task's sandbox is released: the process exits with the
      // unmount started and not done (execa's umount would die with it).
      const script = [
        `import { mountCapVolume, unmountCapVolume } from ${JSON.stringify(CAP_VOLUME)};`,
        `const request = { mountPath: ${JSON.stringify(mountPath)}, capBytes: ${8 * MiB}, startBytes: 0, startFiles: 0, owner: { uid: 0, gid: 0 } };`,
        "if ((await mountCapVolume(request)).kind !== 'hard') process.exit(3);",
        'void unmountCapVolume(request.mountPath);',
        'process.exit(0);',
      ].join('\n');
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: path.resolve(import.meta.dirname, '..', '..'),
        stdio: 'pipe',
      });
      // The probe: the image was made and mounted by the child (it exited 0, not 3).
      expect(existsSync(capImagePath(mountPath))).toBe(true);
      expect(await mountPoints()).not.toContain(mountPath);
      expect(loopDevicesOf(capImagePath(mountPath))).toBe('');
    });
  },
);
