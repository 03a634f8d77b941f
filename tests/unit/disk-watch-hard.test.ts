/**
 * DiskWatch on a hard-capped directory: no walk, only `statfs`; the cap counts as reached when the directory's
 * own file system has less than 1 MiB (FULL_BYTES) free. On a real small loop-mounted ext4 image (cap-volume.ts),
 * which needs root and loop devices; skipped with the reason otherwise.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { DiskCapReached } from '../../src/core/limits.js';
import { hardCapSupport, mountCapVolume, removeCapVolume } from '../../src/sandbox/cap-volume.js';
import { DiskWatch } from '../../src/sandbox/disk-watch.js';

const MiB = 1024 ** 2;
const support = await hardCapSupport();
const skipReason = support.kind === 'watched' ? support.reason : '';

describe.skipIf(support.kind !== 'hard')(
  `DiskWatch on a hard cap ${skipReason && `(skipped: ${skipReason})`}`,
  () => {
    it('sees nothing while the file system has room, then the cap reached once less than 1 MiB is free', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ar-disk-watch-hard-'));
      const mountPath = path.join(dir, 'repo');
      onTestFinished(async () => {
        await removeCapVolume(mountPath);
        rmSync(dir, { recursive: true, force: true });
      });
      const capBytes = 8 * MiB;
      const made = await mountCapVolume({
        mountPath,
        capBytes,
        startBytes: 0,
        startFiles: 0,
        owner: { uid: 0, gid: 0 },
      });
      expect(made).toEqual({ kind: 'hard' });

      const reached: DiskCapReached[] = [];
      const watch = new DiskWatch({
        directories: [{ cap: 'repository', path: mountPath, limitBytes: capBytes, hard: true }],
        onExceeded: async (figures) => {
          reached.push(figures);
        },
        pollMs: 20,
      });
      await watch.start();
      onTestFinished(() => watch.stop());

      // Half the cap written: room left, nothing reached (the trigger is not merely "something was written").
      writeFileSync(path.join(mountPath, 'half'), Buffer.alloc(capBytes / 2, 1));
      execFileSync('sync', ['-f', mountPath]);
      expect(await watch.check()).toBeNull();
      expect(reached).toEqual([]);

      // A worker's fallocate far past the cap: the write itself fails.
      const fill = (() => {
        try {
          execFileSync('fallocate', ['-l', '1G', path.join(mountPath, 'fill')], { stdio: 'pipe' });
          return 'written';
        } catch (error) {
          return String((error as { stderr?: Buffer }).stderr ?? error);
        }
      })();
      expect(fill).toMatch(/No space left on device/);
      // Then as much room left as a small write needs, under 1 MiB but not none: the trigger is the 1 MiB mark,
      // not a file system full to the last block.
      rmSync(path.join(mountPath, 'fill'), { force: true });
      execFileSync('sync', ['-f', mountPath]);
      const left = (await statfs(mountPath)).bavail * 4096 - 512 * 1024;
      execFileSync('fallocate', ['-l', String(left), path.join(mountPath, 'last')]);
      const fs = await statfs(mountPath);
      expect(fs.bavail * fs.bsize).toBeGreaterThan(256 * 1024);
      expect(fs.bavail * fs.bsize).toBeLessThan(MiB);

      // The 20 ms poll finds it on its own, without check().
      const deadline = Date.now() + 5_000;
      while (reached.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(reached).toHaveLength(1);
      expect(reached[0]).toMatchObject({
        code: 'disk',
        cap: 'repository',
        limitBytes: capBytes,
        path: mountPath,
        hard: true,
      });
      expect(reached[0]!.grewBytes).toBeGreaterThan(capBytes / 2);
      expect(watch.capReached()).toEqual(reached[0]);
      // Once: a later check does not report it again.
      await watch.check();
      expect(reached).toHaveLength(1);
    });
  },
);
