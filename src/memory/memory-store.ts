/**
 * The memory bank's files: read from the working tree (what `memory list` shows and `memory add` writes) or
 * from a commit (what a task reads: its base commit, never the worker's workspace), and written for the person
 * to commit (or committed with `--commit`, those files only).
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { git, splitNul, tryGit } from '../workspace/git/git-command.js';
import {
  ENTRY_FILE_NAME,
  MAX_ENTRY_BYTES,
  formatEntry,
  memoryDirPath,
  nextEntryName,
  parseEntry,
  type MemoryBankEntry,
  type MemoryFrontMatter,
} from './memory-entry.js';
import { memoryBankView, type MemoryBankView } from './memory-view.js';
import { readProjectInstructions } from './project-instructions.js';
import { WORKER_KINDS, WORKER_TYPES } from '../worker/worker-kinds.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Entries read, and the files that could not be (each with why): a bad file is said, never fatal. */
export interface MemoryRead {
  entries: MemoryBankEntry[];
  problems: string[];
}

/** Reads the entry files of the working tree's memory folder (regular files only, no link followed). */
export async function readMemoryDir(repoRoot: string, dir: string): Promise<MemoryRead> {
  const relative = memoryDirPath(dir);
  const folder = path.join(repoRoot, relative);
  const stats = await lstat(folder).catch(() => null);
  if (stats === null) return { entries: [], problems: [] };
  if (!stats.isDirectory()) return { entries: [], problems: [`${relative}: not a directory`] };
  const read: MemoryRead = { entries: [], problems: [] };
  for (const name of (await readdir(folder)).sort()) {
    if (!name.endsWith('.md')) continue;
    const file = `${relative}/${name}`;
    if (!ENTRY_FILE_NAME.test(name)) {
      read.problems.push(`${file}: not an entry file name (NNNN-slug.md)`);
      continue;
    }
    try {
      read.entries.push(parseEntry(await readRegularFile(path.join(folder, name)), file));
    } catch (error) {
      read.problems.push(error instanceof Error ? error.message : String(error));
    }
  }
  return read;
}

/** Reads a regular file of at most `maxBytes` (never through a link, never a FIFO or device). */
export async function readRegularFile(file: string, maxBytes: number = MAX_ENTRY_BYTES): Promise<string> {
  const handle = await open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new Error(`${file}: not a regular file`);
    if (stats.size > maxBytes) throw new Error(`${file}: larger than ${maxBytes} bytes`);
    return (await handle.readFile()).toString('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Reads the entries committed at `commit` in the memory folder (blobs only: a link or submodule there is no
 * entry). What a task's worker changes in its workspace never reaches this read.
 */
export async function readMemoryAtCommit(repoRoot: string, commit: string, dir: string): Promise<MemoryRead> {
  const relative = memoryDirPath(dir);
  const listed = await git(['ls-tree', '-z', '--full-tree', `${commit}`, '--', `${relative}/`], {
    cwd: repoRoot,
  });
  const read: MemoryRead = { entries: [], problems: [] };
  for (const line of splitNul(listed)) {
    const tab = line.indexOf('\t');
    const [mode = '', type = '', sha = ''] = line.slice(0, tab).split(' ');
    const file = line.slice(tab + 1);
    const name = file.slice(relative.length + 1);
    if (!name.endsWith('.md')) continue;
    if (type !== 'blob' || (mode !== '100644' && mode !== '100755') || !ENTRY_FILE_NAME.test(name)) {
      read.problems.push(`${file}: not an entry file`);
      continue;
    }
    const blob = await tryGit(['cat-file', 'blob', sha], { cwd: repoRoot, maxOutputBytes: MAX_ENTRY_BYTES });
    if (blob.exitCode !== 0) {
      read.problems.push(`${file}: unreadable, or larger than ${MAX_ENTRY_BYTES} bytes`);
      continue;
    }
    try {
      read.entries.push(parseEntry(blob.stdout, file));
    } catch (error) {
      read.problems.push(error instanceof Error ? error.message : String(error));
    }
  }
  return read;
}

/** Writes a new entry file (never over an existing one); returns its repository path. */
export async function addMemoryEntry(
  repoRoot: string,
  dir: string,
  front: MemoryFrontMatter,
  body: string,
): Promise<string> {
  const relative = memoryDirPath(dir);
  const folder = path.join(repoRoot, relative);
  await mkdir(folder, { recursive: true });
  const name = nextEntryName(await readdir(folder), front.title);
  await writeFile(path.join(folder, name), formatEntry(front, body), { flag: 'wx' });
  return `${relative}/${name}`;
}

/** Rewrites an entry's file with another status (its text kept); returns its repository path. */
export async function setMemoryStatus(
  repoRoot: string,
  entry: MemoryBankEntry,
  status: MemoryFrontMatter['status'],
): Promise<string> {
  const { title, source, created } = entry;
  await writeFile(
    path.join(repoRoot, entry.file),
    formatEntry({ title, status, source, created }, entry.body),
  );
  return entry.file;
}

/** Finds an entry by its id, its number (`3`, `0003`) or its file; null when none matches. */
export function findEntry(entries: readonly MemoryBankEntry[], wanted: string): MemoryBankEntry | null {
  const number = /^\d+$/.test(wanted) ? Number(wanted) : null;
  return (
    entries.find(
      (entry) =>
        entry.id === wanted ||
        entry.file === wanted ||
        (number !== null && Number(ENTRY_FILE_NAME.exec(`${entry.id}.md`)?.[1]) === number),
    ) ?? null
  );
}

/** Commits exactly `files` (nothing else the person has staged goes in) with `message`; returns the commit. */
export async function commitMemoryFiles(
  repoRoot: string,
  files: readonly string[],
  message: string,
): Promise<string> {
  await git(['add', '--', ...files], { cwd: repoRoot });
  await git(['commit', '--quiet', '--only', '-m', message, '--', ...files], { cwd: repoRoot });
  return (await git(['rev-parse', 'HEAD'], { cwd: repoRoot })).trim();
}

/** Every project file agent-runner merges with the memory bank for some CLI (AGENTS.md, CLAUDE.md, ...). */
export const MERGED_PROJECT_FILES: readonly string[] = [
  ...new Set(WORKER_TYPES.flatMap((type) => WORKER_KINDS[type].projectFiles?.names ?? [])),
];

/**
 * The memory bank a task reads: the entries and the project's own instructions files committed at `base` (its
 * base commit) in the host's repository, as the prompts and the workers' instructions files hold them.
 */
export async function taskMemoryBank(repoRoot: string, base: string, dir: string): Promise<MemoryBankView> {
  const commit = (
    await git(['rev-parse', '--verify', '--end-of-options', `${base}^{commit}`], { cwd: repoRoot })
  ).trim();
  const [read, project] = await Promise.all([
    readMemoryAtCommit(repoRoot, commit, dir),
    readProjectInstructions(repoRoot, commit, MERGED_PROJECT_FILES),
  ]);
  return memoryBankView(read.entries, project);
}
