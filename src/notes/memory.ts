/**
 * Memory: earlier tasks' notes in `.agent-runner/` offered to the Meta-agent as title + summary + path
 * (the seed's "memory bank": a summary plus a reference, not the whole note).
 *
 * Only notes the runner wrote are memory: a note's bytes must match the digest recorded in its task's journal
 * when the runner wrote it (src/notes/note-digest.ts), and neither the note nor its journal may be tracked by
 * git, since a merged branch brings whatever a worker committed (a forged note with a journal to match).
 * Anything else there (a note edited, copied in by hand, merged, or written by a version that recorded no
 * digest) is left out.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { MemoryEntry } from '../core/ports.js';
import { isValidTaskId } from '../core/task-id.js';
import { splitNul, tryGit } from '../workspace/git/git-command.js';
import { STATE_DIR_NAME, taskLayout } from '../workspace/layout.js';
import { noteDigest, recordedNoteDigests } from './note-digest.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** A note file's name, holding its task id. */
const NOTE_NAME = /^task-(.+)\.md$/;
/** A note larger than this is not the runner's (its notes are a few KiB). */
const MAX_NOTE_BYTES = 1024 * 1024;

/**
 * Reads at most `limit` of the most recent notes the runner wrote in `agentRunnerDir` (the repository's
 * `.agent-runner`, the repository root its parent), skipping the current task's own.
 */
export async function readNoteMemory(
  agentRunnerDir: string,
  excludeTaskId: string,
  limit = 20,
): Promise<MemoryEntry[]> {
  const names = await noteNames(agentRunnerDir);
  if (names.length === 0) return [];
  const repoRoot = path.dirname(agentRunnerDir);
  const tracked = await trackedUnderStateDir(repoRoot);
  // Without the list of tracked files nothing can be told apart: no memory rather than a forged one.
  if (tracked === null) return [];
  const entries: (MemoryEntry & { finished: string })[] = [];
  for (const name of names) {
    const taskId = NOTE_NAME.exec(name)?.[1] ?? '';
    if (taskId === excludeTaskId || !isValidTaskId(taskId)) continue;
    const text = await runnerNote(repoRoot, taskId, tracked);
    if (text !== null) entries.push(entryOf(text, name, path.join(agentRunnerDir, name)));
  }
  return entries
    .sort((a, b) => b.finished.localeCompare(a.finished))
    .slice(0, limit)
    .map(({ title, summary, path: file }) => ({ title, summary, path: file }));
}

/** The note files' names in the directory; none when it is missing or not a real directory (a link). */
async function noteNames(agentRunnerDir: string): Promise<string[]> {
  const stats = await lstat(agentRunnerDir).catch(() => null);
  if (stats === null || !stats.isDirectory()) return [];
  return (await readdir(agentRunnerDir).catch(() => [])).filter((name) => NOTE_NAME.test(name));
}

/**
 * Paths under `.agent-runner` that git tracks in the repository (lower case: a case-insensitive file system
 * checks `.AGENT-RUNNER/x` out into `.agent-runner/x`); null when git cannot say.
 */
async function trackedUnderStateDir(repoRoot: string): Promise<Set<string> | null> {
  const listed = await tryGit(['ls-files', '-z', '--', `:(icase)${STATE_DIR_NAME}`], { cwd: repoRoot });
  if (listed.exitCode !== 0) return null;
  return new Set(splitNul(listed.stdout).map((file) => file.toLowerCase()));
}

/**
 * The text of the note of `taskId` when the runner wrote it as it is now: nothing at, below or above the note
 * and its run directory tracked, and its bytes those whose digest the journal recorded; else null.
 */
async function runnerNote(repoRoot: string, taskId: string, tracked: Set<string>): Promise<string | null> {
  const layout = taskLayout(repoRoot, taskId);
  const note = path.join(layout.stateDir, `task-${taskId}.md`);
  const ours = [repositoryPath(repoRoot, note), repositoryPath(repoRoot, layout.runDir)];
  for (const file of tracked) if (ours.some((own) => nestedOrSame(file, own))) return null;
  const digests = await recordedNoteDigests(layout.runDir, path.basename(note));
  if (digests.length === 0) return null;
  const bytes = await regularFileBytes(note);
  if (bytes === null || !digests.includes(noteDigest(bytes))) return null;
  return bytes.toString('utf8');
}

/** A host path as git lists it (relative to the root, `/`-separated), in lower case like the tracked set. */
function repositoryPath(repoRoot: string, file: string): string {
  return path.relative(repoRoot, file).split(path.sep).join('/').toLowerCase();
}

/** One of the two repository paths is the other, or lies below it. */
function nestedOrSame(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/** The file's bytes when it is a regular file (not followed through a link) of at most MAX_NOTE_BYTES. */
async function regularFileBytes(file: string): Promise<Buffer | null> {
  const handle = await open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(() => null);
  if (handle === null) return null;
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > MAX_NOTE_BYTES) return null;
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** The memory entry of a note's text: its title, state and PRD summary, and when it finished (for the order). */
function entryOf(text: string, name: string, file: string): MemoryEntry & { finished: string } {
  const title = /^# (.+)$/m.exec(text)?.[1]?.trim() ?? name;
  const state = /\*\*State\*\* \| \*\*([A-Z_]+)\*\*/.exec(text)?.[1] ?? 'UNKNOWN';
  const summary = /## PRD summary\n+([\s\S]*?)\n+## /.exec(text)?.[1]?.trim() ?? '';
  const finished = /→ ([0-9T:.\-Z]+)\)/.exec(text)?.[1] ?? '';
  return { title, summary: `${state}. ${summary}`.slice(0, 400), path: file, finished };
}
