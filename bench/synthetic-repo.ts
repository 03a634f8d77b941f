/**
 * Synthetic repositories for the size series: N source files of about 4 KB in directories of 100, with a few
 * commits of history (each later commit rewrites 5% of the files), a `.env` and a `secrets/` file so the
 * exclude rules have something to remove. Generated once with `git fast-import` and cached under the
 * system's temporary directory, keyed by the parameters, because writing 100,000 files takes minutes on a
 * 2-core machine. `resetSyntheticRepo` puts a cached repository back to its pristine state between runs.
 */
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';

export interface SyntheticRepoOptions {
  files: number;
  /** Commits of history (the first adds every file). */
  commits?: number;
  fileBytes?: number;
}

const GENERATOR_VERSION = 1;
const WORDS = [
  'const',
  'return',
  'function',
  'value',
  'export',
  'import',
  'await',
  'result',
  'options',
  'index',
  'string',
  'number',
  'if',
  'else',
  'for',
  'while',
  'throw',
  'new',
  'Error',
  'map',
];

/** A deterministic pseudo-random generator (mulberry32), so the same parameters give the same repository. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fileText(next: () => number, bytes: number, label: string): string {
  const lines = [`// ${label}`];
  let size = lines[0]!.length;
  while (size < bytes) {
    const count = 4 + Math.floor(next() * 8);
    const words: string[] = [];
    for (let index = 0; index < count; index += 1) {
      words.push(WORDS[Math.floor(next() * WORDS.length)]!);
      if (next() < 0.3) words.push(String(Math.floor(next() * 100000)));
    }
    const line = `  ${words.join(' ')};`;
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

function filePath(index: number): string {
  const directory = Math.floor(index / 100);
  return `src/module-${Math.floor(directory / 30)}/part-${directory % 30}/file-${index}.ts`;
}

/** The cache directory of these parameters. */
export function syntheticRepoPath(options: SyntheticRepoOptions): string {
  const commits = options.commits ?? 3;
  const bytes = options.fileBytes ?? 4096;
  return path.join(
    tmpdir(),
    'agent-runner-bench-repos',
    `v${GENERATOR_VERSION}-files-${options.files}-commits-${commits}-bytes-${bytes}`,
  );
}

/** Returns the path of a generated repository with these parameters, generating it when not cached. */
export async function syntheticRepo(
  options: SyntheticRepoOptions,
  log: (message: string) => void = () => undefined,
): Promise<string> {
  const target = syntheticRepoPath(options);
  if (existsSync(path.join(target, '.git', 'agent-runner-bench-complete'))) {
    await resetSyntheticRepo(target);
    return target;
  }
  const commits = options.commits ?? 3;
  const bytes = options.fileBytes ?? 4096;
  const building = `${target}.building-${process.pid}`;
  await rm(building, { recursive: true, force: true });
  await mkdir(building, { recursive: true });
  log(`generating a ${options.files}-file repository in ${target} (cached for later runs)`);
  const git = (args: string[]) => execa('git', args, { cwd: building });
  await git(['init', '-q', '--initial-branch=main']);
  // Later commits continue the branch fast-import holds in memory (no `from` needed).
  const importer = execa('git', ['fast-import', '--quiet'], {
    cwd: building,
    stdin: 'pipe',
    stderr: 'inherit',
  });
  const write = (chunk: string) =>
    new Promise<void>((resolve, reject) =>
      importer.stdin!.write(chunk, (error) => (error ? reject(error) : resolve())),
    );
  const next = random(options.files);
  let mark = 0;
  for (let commit = 0; commit < commits; commit += 1) {
    const changed: number[] = [];
    if (commit === 0) for (let index = 0; index < options.files; index += 1) changed.push(index);
    else for (let index = 0; index < options.files; index += 1) if (next() < 0.05) changed.push(index);
    const marks: Array<[string, number]> = [];
    for (const index of changed) {
      const text = fileText(next, bytes, `${filePath(index)} revision ${commit}`);
      mark += 1;
      marks.push([filePath(index), mark]);
      await write(`blob\nmark :${mark}\ndata ${Buffer.byteLength(text)}\n${text}\n`);
    }
    const extra =
      commit === 0 ? ['.env', 'API_KEY=synthetic-secret\n', 'secrets/token.txt', 'synthetic-token\n'] : [];
    const message = `commit ${commit}: ${changed.length} files`;
    let body =
      `commit refs/heads/main\ncommitter Bench <bench@localhost> ${1700000000 + commit * 3600} +0000\n` +
      `data ${message.length}\n${message}\n`;
    for (const [file, fileMark] of marks) body += `M 100644 :${fileMark} ${file}\n`;
    for (let index = 0; index < extra.length; index += 2) {
      const content = extra[index + 1]!;
      body += `M 100644 inline ${extra[index]}\ndata ${Buffer.byteLength(content)}\n${content}\n`;
    }
    await write(`${body}\n`);
  }
  importer.stdin!.end();
  await importer;
  // A real clone has its history in one pack and its working tree checked out.
  await git(['repack', '-a', '-d', '-q']);
  await git(['checkout', '-q', '-f', 'main']);
  await git(['config', 'user.name', 'Bench']);
  await git(['config', 'user.email', 'bench@localhost']);
  await git(['config', 'gc.auto', '0']);
  await writeFile(path.join(building, '.git', 'agent-runner-bench-complete'), '');
  await rm(target, { recursive: true, force: true });
  await rename(building, target);
  return target;
}

/** Removes everything a task left in the repository (its state directory, branches, refs and worktrees). */
export async function resetSyntheticRepo(repo: string): Promise<void> {
  const git = (args: string[]) => execa('git', args, { cwd: repo });
  await rm(path.join(repo, '.agent-runner'), { recursive: true, force: true });
  await git(['worktree', 'prune']);
  const refs = (
    await git(['for-each-ref', '--format=%(refname)', 'refs/agent-runner', 'refs/heads/agent-runner'])
  ).stdout
    .split('\n')
    .filter(Boolean);
  if (refs.length > 0)
    await execa('git', ['update-ref', '--stdin'], {
      cwd: repo,
      input: refs.map((ref) => `delete ${ref}\n`).join(''),
    });
  // Objects the tasks wrote (snapshot trees, replayed commits) go away too, so each run starts alike.
  await git(['prune', '--expire=now']);
}
