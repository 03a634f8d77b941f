import { mkdir, mkdtemp, rm, symlink, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { listEntries, planOwnership, type ListedEntry } from '../../src/workspace/scope/permissions.js';
import { compileScope } from '../../src/workspace/scope/scope.js';

const worker = { uid: 10001, gid: 10001 };
const guard = { uid: 10002, gid: 10002 };
const scope = compileScope({ exclude: [], read: ['docs/'], write: [] });

let nextIno = 100;
const entry = (kind: string, entryPath: string, mode: number, ids = { uid: 0, gid: 0 }): ListedEntry => ({
  kind,
  mode,
  uid: ids.uid,
  gid: ids.gid,
  ino: (nextIno += 1),
  path: entryPath,
});

/** The plan's steps by path, without the kind and inode (checked on their own). */
function stepsByPath(plan: readonly { path: string }[]): Record<string, unknown> {
  return Object.fromEntries(
    plan.map((item) => {
      const { kind: _kind, ino: _ino, ...rest } = item as Record<string, unknown>;
      return [item.path, rest];
    }),
  );
}

describe('ownership plan from one listing', () => {
  it('gives writable files and .git to the worker, read-only files and their directories to the guard', () => {
    const { plan, readOnlyFiles, writableFiles } = planOwnership(
      [
        entry('d', '', 0o755),
        entry('d', '.git', 0o755),
        entry('f', '.git/HEAD', 0o644),
        entry('d', 'docs', 0o755),
        entry('d', 'docs/deep', 0o755),
        entry('f', 'docs/deep/guide.md', 0o644),
        entry('d', 'src', 0o755),
        entry('f', 'src/a.ts', 0o644),
        entry('l', 'src/link', 0o777),
      ],
      { scope, worker, guard, owned: true },
    );
    const byPath = stepsByPath(plan);
    expect(readOnlyFiles).toBe(1);
    expect(writableFiles).toBe(2);
    expect(byPath['docs/deep/guide.md']).toEqual({ path: 'docs/deep/guide.md', ...guard, mode: 0o444 });
    // Every ancestor of a read-only file, up to the root, is the guard's and sticky.
    for (const directory of ['docs/deep', 'docs', '.'])
      expect(byPath[directory]).toEqual({ path: directory, ...guard, mode: 0o1777 });
    expect(byPath['src']).toEqual({ path: 'src', ...worker, mode: null });
    expect(byPath['src/a.ts']).toEqual({ path: 'src/a.ts', ...worker, mode: null });
    expect(byPath['.git/HEAD']).toEqual({ path: '.git/HEAD', ...worker, mode: null });
    // A symlink is chowned, never chmod-ed.
    expect(byPath['src/link']).toEqual({ path: 'src/link', ...worker, mode: null });
  });

  it('plans only what changes: a second pass over the applied state is empty but for new worker files', () => {
    const { plan } = planOwnership(
      [
        entry('d', '', 0o1777, guard),
        entry('d', 'docs', 0o1777, guard),
        entry('f', 'docs/guide.md', 0o444, guard),
        // Created by the worker in a read-only directory since the last pass.
        entry('f', 'docs/new.md', 0o644, worker),
        entry('f', 'src.ts', 0o644, worker),
      ],
      { scope, worker, guard, owned: true },
    );
    expect(plan).toMatchObject([{ path: 'docs/new.md', ...guard, mode: 0o444, kind: 'f' }]);
  });

  it('never keeps a setuid or setgid bit of the worker: a mode the host sets has permission bits only', () => {
    const listed = [
      entry('d', '', 0o755, worker),
      entry('f', 'tool', 0o4755, worker),
      entry('f', 'docs/setgid', 0o2555, worker),
      entry('f', '.git/hooks/x', 0o6555, worker),
      entry('d', 'src', 0o3755, worker),
    ];
    const { plan } = planOwnership(listed, { scope, worker, guard, owned: true });
    const byPath = stepsByPath(plan);
    expect(byPath['tool']).toEqual({ path: 'tool', ...worker, mode: 0o755 });
    expect(byPath['docs/setgid']).toEqual({ path: 'docs/setgid', ...guard, mode: 0o555 });
    expect(byPath['.git/hooks/x']).toEqual({ path: '.git/hooks/x', ...worker, mode: 0o755 });
    expect(byPath['src']).toEqual({ path: 'src', ...worker, mode: 0o755 });
    for (const step of plan) expect((step.mode ?? 0) & 0o6000).toBe(0);
    // Each step names the entry the listing saw.
    expect(plan.find((step) => step.path === 'tool')).toMatchObject({ kind: 'f', ino: listed[1]?.ino });
  });

  it('without ownership (no root, no helper) changes only the write bits', () => {
    const { plan } = planOwnership(
      [entry('d', '', 0o755), entry('d', 'docs', 0o755), entry('f', 'docs/guide.md', 0o644)],
      { scope, worker, guard, owned: false },
    );
    expect(plan).toMatchObject([{ path: 'docs/guide.md', ...guard, mode: 0o444 }]);
  });

  it('lists type, mode, owner and path without following symlinks, names with spaces and newlines included', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'ownership-list-'));
    onTestFinished(() => rm(root, { recursive: true, force: true }));
    await mkdir(path.join(root, 'a dir'));
    await writeFile(path.join(root, 'a dir', 'line\nbreak.txt'), 'x');
    await chmod(path.join(root, 'a dir', 'line\nbreak.txt'), 0o640);
    await symlink('/etc', path.join(root, 'escape'));
    const listed = await listEntries(root);
    const byPath = Object.fromEntries(listed.map((item) => [item.path, item]));
    expect(Object.keys(byPath).sort()).toEqual(['', 'a dir', 'a dir/line\nbreak.txt', 'escape']);
    expect(byPath['a dir/line\nbreak.txt']).toMatchObject({ kind: 'f', mode: 0o640 });
    expect(byPath['a dir']?.kind).toBe('d');
    expect(byPath['escape']?.kind).toBe('l');
    expect(byPath['']?.uid).toBe(process.getuid?.());
  });
});
