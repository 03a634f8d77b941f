/**
 * Memory: earlier tasks' notes in `.agent-runner/` offered to the Meta-agent as title + summary + path
 * (the seed's "memory bank": a summary plus a reference, not the whole note).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { MemoryEntry } from '../core/ports.js';

/** Reads at most `limit` of the most recent notes, skipping the current task's own. */
export async function readNoteMemory(
  agentRunnerDir: string,
  excludeTaskId: string,
  limit = 20,
): Promise<MemoryEntry[]> {
  let names: string[];
  try {
    names = (await readdir(agentRunnerDir)).filter((name) => /^task-.+\.md$/.test(name));
  } catch {
    return [];
  }
  const entries: (MemoryEntry & { finished: string })[] = [];
  for (const name of names) {
    if (name === `task-${excludeTaskId}.md`) continue;
    const file = path.join(agentRunnerDir, name);
    const text = await readFile(file, 'utf8').catch(() => '');
    const title = /^# (.+)$/m.exec(text)?.[1]?.trim() ?? name;
    const state = /\*\*State\*\* \| \*\*([A-Z_]+)\*\*/.exec(text)?.[1] ?? 'UNKNOWN';
    const summary = /## PRD summary\n+([\s\S]*?)\n+## /.exec(text)?.[1]?.trim() ?? '';
    const finished = /→ ([0-9T:.\-Z]+)\)/.exec(text)?.[1] ?? '';
    entries.push({ title, summary: `${state}. ${summary}`.slice(0, 400), path: file, finished });
  }
  return entries
    .sort((a, b) => b.finished.localeCompare(a.finished))
    .slice(0, limit)
    .map(({ title, summary, path: file }) => ({ title, summary, path: file }));
}
