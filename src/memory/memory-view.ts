/**
 * What a task's prompts and sandbox hold of the memory bank, from its entries (pure): a bounded summary of the
 * active entries for the Meta-agent and the worker prompt, the list of their files, and the text each worker
 * CLI finds in its native instructions file. Archived entries are in none of them; every cut is said.
 */
import { cutText } from '../notes/markdown-text.js';
import { showControls } from '../notes/terminal-text.js';
import { WORKER_KINDS, WORKER_TYPES, type WorkerType } from '../worker/worker-kinds.js';
import type { MemoryBankEntry } from './memory-entry.js';
import type { ProjectInstructions } from './project-instructions.js';

/** The memory bank as one task sees it. */
export interface MemoryBankView {
  /** One line per active entry (title, file, the start of its text), at most {@link MEMORY_SUMMARY_MAX_CHARS}. */
  summary: string;
  /** The active entries' files (repository paths), at most {@link MEMORY_FILES_MAX}; a cut says how many. */
  files: string[];
  /** The active entries in full, for the worker CLI's instructions file, at most {@link MEMORY_INSTRUCTIONS_MAX_CHARS}. */
  instructions: string;
  /**
   * The text of each worker CLI's instructions file: the project's own files of that CLI (AGENTS.md,
   * CLAUDE.md, ...) as committed at the same commit, then the entries ({@link mergeInstructions}); the entries
   * alone for a CLI that reads the project's file itself (`projectFiles: null`).
   */
  workerInstructions: Readonly<Record<WorkerType, string>>;
  /** The section of the worker prompt and the Meta-agent's context: the summary and the files ('' without any). */
  section: string;
  active: number;
  archived: number;
}

export const MEMORY_SUMMARY_MAX_CHARS = 4000;
export const MEMORY_SUMMARY_LINE_CHARS = 240;
export const MEMORY_INSTRUCTIONS_MAX_CHARS = 32_000;
export const MEMORY_FILES_MAX = 100;

/** The heading that opens the memory bank's part of a worker's instructions file. */
export const MEMORY_INSTRUCTIONS_HEADING = '# Team decisions (agent-runner memory bank)';

/** Terminal controls and bidi overrides shown as visible escapes (`\x1b`); line breaks kept. */
function clean(text: string): string {
  return showControls(text.replace(/\r\n?/g, '\n'));
}

function oneLine(text: string, max: number): string {
  const flat = showControls(text.replace(/\s+/g, ' ').trim(), 'one_line');
  const cut = cutText(flat, max - 1);
  return cut.notice === '' ? flat : `${cut.text}…`;
}

/** Entries in the order the prompts show them: by id (the number a new entry takes grows). */
function activeEntries(entries: readonly MemoryBankEntry[]): MemoryBankEntry[] {
  return entries.filter((entry) => entry.status === 'active').sort((a, b) => a.id.localeCompare(b.id));
}

/**
 * The view of `entries` (any order, archived ones included), with `project` the project's own instructions
 * files as committed at the same commit.
 */
export function memoryBankView(
  entries: readonly MemoryBankEntry[],
  project: ProjectInstructions = {},
): MemoryBankView {
  const active = activeEntries(entries);
  const summary = summaryOf(active);
  const files = filesOf(active);
  const instructions = instructionsOf(active);
  return {
    summary,
    files,
    instructions,
    workerInstructions: Object.fromEntries(
      WORKER_TYPES.map((type) => [type, mergeInstructions(projectTextsFor(type, project), instructions)]),
    ) as Record<WorkerType, string>,
    section: sectionOf(summary, files),
    active: active.length,
    archived: entries.length - active.length,
  };
}

function summaryOf(active: readonly MemoryBankEntry[]): string {
  const lines: string[] = [];
  let used = 0;
  for (const [index, entry] of active.entries()) {
    const line = oneLine(`- ${entry.title} (${entry.file}): ${entry.body}`, MEMORY_SUMMARY_LINE_CHARS);
    if (used + line.length + 1 > MEMORY_SUMMARY_MAX_CHARS) {
      lines.push(`… [cut: ${active.length - index} more entries not summarised; their files are listed]`);
      break;
    }
    lines.push(line);
    used += line.length + 1;
  }
  return lines.join('\n');
}

function filesOf(active: readonly MemoryBankEntry[]): string[] {
  const files = active.map((entry) => entry.file);
  if (files.length <= MEMORY_FILES_MAX) return files;
  return [
    ...files.slice(0, MEMORY_FILES_MAX),
    `… [cut: ${files.length - MEMORY_FILES_MAX} more files in the same folder]`,
  ];
}

function instructionsOf(active: readonly MemoryBankEntry[]): string {
  if (active.length === 0) return '';
  const head =
    `${MEMORY_INSTRUCTIONS_HEADING}\n\nThe team's decisions for this repository. Follow them. ` +
    'They are read-only: do not change these files or the memory folder.\n';
  const parts = [head];
  let used = head.length;
  for (const [index, entry] of active.entries()) {
    const part = `\n## ${oneLine(entry.title, 200)}\n\n(${entry.file})\n\n${clean(entry.body)}\n`;
    if (used + part.length > MEMORY_INSTRUCTIONS_MAX_CHARS) {
      parts.push(`\n… [cut: ${active.length - index} more entries; read their files in the memory folder]\n`);
      break;
    }
    parts.push(part);
    used += part.length;
  }
  return parts.join('');
}

/** The project's files the CLI of `type` would read, in its order, as committed. */
function projectTextsFor(type: WorkerType, project: ProjectInstructions): string[] {
  const files = WORKER_KINDS[type].projectFiles;
  if (files === null) return [];
  const present = files.names.flatMap((name) => (project[name] === undefined ? [] : [project[name]]));
  return files.read === 'first' ? present.slice(0, 1) : present;
}

/**
 * The project's own texts first, then the memory bank's, a blank line between each ('' when none has any).
 * Terminal controls in the project's text are shown as escapes, as in an entry's.
 */
export function mergeInstructions(projectTexts: readonly string[], instructions: string): string {
  const own = projectTexts.map((text) => clean(text).trim()).filter((text) => text !== '');
  if (own.length === 0) return instructions;
  return instructions === '' ? `${own.join('\n\n')}\n` : `${own.join('\n\n')}\n\n${instructions}`;
}

/** The memory bank's section of the worker prompt and the Meta-agent's context; empty without active entries. */
function sectionOf(summary: string, files: readonly string[]): string {
  if (files.length === 0) return '';
  return `${summary}\n\nEntry files (read-only, in the repository):\n${files.map((file) => `- ${file}`).join('\n')}`;
}
