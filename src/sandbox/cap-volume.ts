/**
 * Hard disk caps: a capped directory of the sandbox (the sandbox repository, CODEX_HOME) lives on an ext4
 * file system of its own, held in a sparse image file of a fixed size next to it and loop-mounted on the host
 * where the directory is. Docker's bind mount of the directory then shows the container that file system, so
 * no write in the sandbox, not even one `fallocate` of a terabyte, can take more of the host's disk than the
 * image's size: past it the write fails with ENOSPC inside the sandbox. The image is outside every mount the
 * worker sees and its size is set by the host, so the worker cannot grow it.
 *
 * Only a root runner with loop devices, `mkfs.ext4` and `mount` can make one; otherwise (or with
 * `sandbox.disk.hard: false`) the cap is the watched one (disk-watch.ts) and the task says why.
 *
 * The image lives only while a sandbox uses the directory. When the sandbox stops (and by `gc` after a crash)
 * the directory is released: its files are copied back out of the image into a plain directory at the same
 * path and the image is deleted, so a person (or the note, or `resume`) finds the sandbox repository's
 * uncommitted files and the worker's home where they always were. A later run mounts a new image and moves the
 * files in ({@link mountCapVolume} adopts a plain directory). Should the copy fail (the host's disk full), the
 * image stays, unmounted, and the next mount finds the files in it: nothing is lost either way. A process that
 * exits without the task's end unmounts lazily and keeps the image for the same reason.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import {
  access,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rename,
  rm,
  rmdir,
  stat,
  truncate,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { DiskCapKind } from '../core/records.js';

/** The image file that holds the file system mounted at `mountPath` (`<dir>.img`, beside it). */
export function capImagePath(mountPath: string): string {
  return `${mountPath}.img`;
}

export interface CapVolumeRequest {
  /** The directory the file system is mounted on (made when missing). */
  mountPath: string;
  /** What the worker may add (the cap). */
  capBytes: number;
  /** What the directory will hold before the worker runs (an estimate from above; 0 for an empty one). */
  startBytes: number;
  /** Files it will hold before the worker runs (for the inode count). */
  startFiles: number;
  /** Owner of the file system's root directory. */
  owner: { uid: number; gid: number };
}

/** One inode per this many bytes of the file system at least: a tree of small files (node_modules) fits. */
const BYTES_PER_INODE = 8192;
const INODE_BYTES = 256;
const MiB = 1024 ** 2;

let support: Promise<DiskCapKind> | null = null;

/** Whether this process can make hard caps: root, loop devices, mkfs.ext4 and mount. Asked once. */
export function hardCapSupport(): Promise<DiskCapKind> {
  support ??= (async (): Promise<DiskCapKind> => {
    if (process.platform !== 'linux') return watched('loop-mounted file systems need Linux');
    if (process.getuid?.() !== 0)
      return watched('the runner is not root, and only root can loop-mount a file system');
    if (!existsSync('/dev/loop-control'))
      return watched('this machine has no loop devices (/dev/loop-control is missing)');
    for (const tool of ['mkfs.ext4', 'mount', 'umount']) {
      const found = await execa(tool, ['-V'], { reject: false, timeout: 5_000 });
      if (found.failed && found.exitCode === undefined)
        return watched(`${tool} is not installed (e2fsprogs, util-linux)`);
    }
    return { kind: 'hard' };
  })();
  return support;
}

function watched(reason: string): DiskCapKind {
  return { kind: 'watched', reason };
}

/** Mount points made by this process and not yet released: unmounted when it exits, whatever the path. */
const mountedHere = new Set<string>();
let exitHookSet = false;

function remember(mountPath: string): void {
  mountedHere.add(mountPath);
  if (exitHookSet) return;
  exitHookSet = true;
  // An exit without the task's own end (an uncaught error, process.exit after Ctrl-C): nothing async runs
  // here, so the unmount is synchronous; a mount a container still holds is detached lazily.
  process.on('exit', () => {
    for (const mounted of mountedHere) spawnSync('umount', ['-l', mounted], { stdio: 'ignore' });
  });
}

/** The mount points (absolute, unescaped) of this mount namespace, from /proc/self/mountinfo. */
export async function mountPoints(): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) =>
      (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(parseInt(octal, 8)),
      ),
    );
}

async function isMountPoint(dir: string): Promise<boolean> {
  return (await mountPoints()).includes(dir);
}

/** The image's size: what the directory starts with, the cap, and ext4's own metadata on top. */
function imageSize(request: CapVolumeRequest, inodes: number): number {
  const data = request.startBytes + request.capBytes;
  // Inode tables, and about 1/128 of the data for bitmaps, group descriptors and directories.
  const size = data + inodes * INODE_BYTES + Math.ceil(data / 128) + MiB;
  return Math.ceil(size / MiB) * MiB;
}

async function run(file: string, args: string[], timeoutMs = 60_000): Promise<void> {
  const result = await execa(file, args, { reject: false, timeout: timeoutMs, stdin: 'ignore' });
  if (result.exitCode !== 0)
    throw new Error(
      `${file} failed: ${String(result.stderr || result.message)
        .trim()
        .split('\n')
        .at(-1)}`,
    );
}

/**
 * Mounts the capped file system at `mountPath`: the existing image when there is one (a later run of the
 * task), else a new one made now. Returns `hard`, or `watched` with the reason when none could be made (the
 * directory is then a plain one, as without hard caps). Never mounts over files: a directory that already
 * holds files and has no image (made by an earlier version) stays as it is, watched.
 */
export async function mountCapVolume(request: CapVolumeRequest): Promise<DiskCapKind> {
  const supported = await hardCapSupport();
  if (supported.kind === 'watched') return supported;
  const { mountPath } = request;
  const image = capImagePath(mountPath);
  // Left mounted by a runner that died: released, and mounted again by this one.
  if (await isMountPoint(mountPath)) await unmountCapVolume(mountPath);
  const hasImage = existsSync(image);
  const entries = await readdir(mountPath).catch(() => null);
  if (!hasImage && entries !== null && entries.length > 0) return adoptDirectory(request);
  await mkdir(mountPath, { recursive: true });
  try {
    if (!hasImage) {
      const inodes = Math.max(
        Math.ceil((request.startBytes + request.capBytes) / BYTES_PER_INODE),
        request.startFiles * 2 + 16_384,
      );
      // Sparse: the host's disk holds only what the file system has written, never more than its size.
      await writeFile(image, '', { flag: 'wx', mode: 0o600 });
      await truncate(image, imageSize(request, inodes));
      // No journal (a scratch file system: a crash loses the sandbox, not the person's work), no reserved
      // blocks (the cap is the worker's), no discard pass, the inode tables written lazily.
      await run('mkfs.ext4', [
        '-q',
        '-F',
        '-b',
        '4096',
        '-m',
        '0',
        '-N',
        String(inodes),
        '-O',
        '^has_journal',
        '-E',
        `nodiscard,lazy_itable_init=1,root_owner=${request.owner.uid}:${request.owner.gid}`,
        '-L',
        'agent-runner',
        image,
      ]);
    }
    // nosuid, nodev: nothing the worker leaves there is a setuid program or a device on the host.
    await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime', image, mountPath]);
    remember(mountPath);
    // mkfs's lost+found would be an unreadable untracked directory in the sandbox repository.
    if (!hasImage) await rmdir(path.join(mountPath, 'lost+found')).catch(() => undefined);
    return { kind: 'hard' };
  } catch (error) {
    if (!hasImage) await rm(image, { force: true }).catch(() => undefined);
    return watched(`the capped file system could not be made: ${(error as Error).message}`);
  }
}

/** Bytes allocated and inodes used under `dir`, on its own file system only. */
async function usage(dir: string): Promise<{ bytes: number; files: number }> {
  const number = async (args: string[]) => {
    const result = await execa('du', [...args, '-sx', '--', dir], { reject: false, timeout: 120_000 });
    const value = Number.parseInt(result.stdout.split('\t')[0] ?? '', 10);
    if (result.exitCode !== 0 || !Number.isFinite(value)) throw new Error(`du ${dir} failed`);
    return value;
  };
  return { bytes: await number(['-B1']), files: await number(['--inodes']) };
}

/**
 * Copies the tree `from` into the existing directory `to` as root without reading or following anything the
 * worker made: links stay links, FIFOs and sockets are made, not opened; runs of zeros become holes, so a
 * file of zeros (a disk-filling attack's usual junk) takes no room on the host. What must not exist on the host's
 * plain disk is then taken out: device nodes (the worker cannot make them, but a copy must not either) and the
 * set-user-ID and set-group-ID bits (the capped file system is mounted nosuid; a plain directory is not).
 */
async function copyTree(from: string, to: string): Promise<void> {
  await run(
    'cp',
    ['-dR', '--preserve=mode,ownership,timestamps,links', '--sparse=always', '--', `${from}/.`, `${to}/`],
    600_000,
  );
  await run('find', [to, '-xdev', '(', '-type', 'b', '-o', '-type', 'c', ')', '-delete'], 120_000);
  await run('find', [to, '-xdev', '-perm', '/6000', '-exec', 'chmod', 'ug-s', '{}', '+'], 120_000);
}

/**
 * A plain directory that holds files (released at the end of an earlier run) gets a capped file system sized
 * for what it holds plus the cap: the files are moved aside, the new file system mounted at the path, the files
 * copied in, and the old copy removed. Should anything fail, the directory is put back as it was, watched.
 */
async function adoptDirectory(request: CapVolumeRequest): Promise<DiskCapKind> {
  const { mountPath } = request;
  const aside = `${mountPath}.adopt`;
  await rm(aside, { recursive: true, force: true });
  let start: { bytes: number; files: number };
  try {
    start = await usage(mountPath);
  } catch (error) {
    return watched(`the capped file system could not be made: ${(error as Error).message}`);
  }
  const owner = await stat(mountPath);
  await rename(mountPath, aside);
  await mkdir(mountPath);
  const made = await mountCapVolume({
    ...request,
    startBytes: Math.max(request.startBytes, start.bytes),
    startFiles: Math.max(request.startFiles, start.files),
    owner: { uid: owner.uid, gid: owner.gid },
  });
  try {
    if (made.kind !== 'hard') throw new Error(made.reason);
    await copyTree(aside, mountPath);
    await rm(aside, { recursive: true, force: true });
    return made;
  } catch (error) {
    await removeCapVolume(mountPath).catch(() => undefined);
    await rm(mountPath, { recursive: true, force: true }).catch(() => undefined);
    await rename(aside, mountPath);
    return made.kind === 'hard'
      ? watched(`the capped file system could not be filled: ${(error as Error).message}`)
      : made;
  }
}

/**
 * Ends a capped directory's file system and keeps its files: they are copied out of the image into a plain
 * directory that takes the mount point's place, and the image is deleted. An image left unmounted by a runner
 * that died is mounted once more to take its files out. When the copy fails the image stays, unmounted, and
 * the next mount finds the files in it.
 */
export async function releaseCapVolume(mountPath: string): Promise<void> {
  const image = capImagePath(mountPath);
  // Still in mountedHere until unmounted: a process that exits during the copy unmounts it (lazily) at exit.
  if (!existsSync(image)) return unmountCapVolume(mountPath);
  if (!(await isMountPoint(mountPath))) {
    const entries = await readdir(mountPath).catch(() => null);
    // Files at the path beside an image: a state this code never leaves; both stay for a person to look at.
    if (entries !== null && entries.length > 0) return;
    await mkdir(mountPath, { recursive: true });
    await run('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev,noatime,ro', image, mountPath]);
    remember(mountPath);
  }
  const out = await mkdtemp(`${mountPath}.out-`);
  try {
    await copyTree(mountPath, out);
  } catch {
    await rm(out, { recursive: true, force: true }).catch(() => undefined);
    return unmountCapVolume(mountPath);
  }
  await unmountCapVolume(mountPath);
  await rmdir(mountPath);
  await rename(out, mountPath);
  await rm(image, { force: true });
}

/** Unmounts the file system at `mountPath` (lazily when a process still holds it); the image stays. */
export async function unmountCapVolume(mountPath: string): Promise<void> {
  if (await isMountPoint(mountPath)) {
    const plain = await execa('umount', [mountPath], { reject: false, timeout: 30_000 });
    // Still held (a container being removed, a shell in it): detached now, freed when the last user goes.
    if (plain.exitCode !== 0) await execa('umount', ['-l', mountPath], { reject: false, timeout: 30_000 });
  }
  // Forgotten only once it is gone: a process that exits while `umount` runs (a server stopped with SIGTERM as
  // a task's sandbox is released) kills that umount with it, and the exit hook must still detach the mount.
  mountedHere.delete(mountPath);
}

/** Unmounts and deletes the capped file system at `mountPath` (the directory's files go with it). */
export async function removeCapVolume(mountPath: string): Promise<void> {
  await unmountCapVolume(mountPath);
  await rm(capImagePath(mountPath), { force: true });
}

/** Every capped file system mounted at or below `dir` (an `.agent-runner` directory, a task's). */
export async function capVolumesUnder(dir: string): Promise<string[]> {
  const prefix = dir.endsWith(path.sep) ? dir : dir + path.sep;
  const found: string[] = [];
  for (const mounted of await mountPoints()) {
    if (mounted !== dir && !mounted.startsWith(prefix)) continue;
    // Ours only: the image beside it.
    if (
      await access(capImagePath(mounted)).then(
        () => true,
        () => false,
      )
    )
      found.push(mounted);
  }
  return found;
}

/** The allocated size of a capped directory's image on the host (0 without one). */
export async function capImageBytes(mountPath: string): Promise<number> {
  const info = await stat(capImagePath(mountPath)).catch(() => null);
  return info ? info.blocks * 512 : 0;
}

/**
 * Whether a hard cap can really be made here: a small capped file system made, mounted, written past its
 * size (the write must fail), unmounted and deleted in a temporary directory.
 */
export async function probeHardCap(): Promise<DiskCapKind> {
  const supported = await hardCapSupport();
  if (supported.kind === 'watched') return supported;
  const dir = await mkdtemp(path.join(tmpdir(), 'agent-runner-cap-'));
  const mountPath = path.join(dir, 'probe');
  try {
    const made = await mountCapVolume({
      mountPath,
      capBytes: MiB,
      startBytes: 0,
      startFiles: 0,
      owner: { uid: 0, gid: 0 },
    });
    if (made.kind === 'watched') return made;
    const past = await execa('fallocate', ['-l', '1G', path.join(mountPath, 'fill')], { reject: false });
    if (past.exitCode === 0) return watched('a write past the capped file system did not fail');
    return made;
  } finally {
    await removeCapVolume(mountPath).catch(() => undefined);
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
