/**
 * Writes the task note `.agent-runner/task-<ID>.md` from the task record, with a Handlebars template
 * (`templates/task-note.md.hbs`, or `notes.template` from the config). Renders well on GitHub. The template
 * gets the view of note-view.ts, whose texts are already redacted, escaped and bounded: the runner's rows and
 * headings are the template's alone, and the whole note stays within `NOTE_LIMITS.note`.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import Handlebars from 'handlebars';
import type { WrittenNote } from '../core/events.js';
import type { TaskRecord } from '../core/task-runner.js';
import { decisionsOffered, recordProposals } from '../memory/memory-proposals.js';
import { PACKAGE_ROOT } from '../version.js';
import { NOTE_LIMITS, boundDocument } from './markdown-text.js';
import { noteDigest } from './note-digest.js';
import { noteView, statusIcon, type NoteContext } from './note-view.js';
import { showControls } from './terminal-text.js';

export { noteView, summarizePrd, type NoteContext } from './note-view.js';

export const DEFAULT_NOTE_TEMPLATE = path.join(PACKAGE_ROOT, 'templates', 'task-note.md.hbs');

/** The heading of the note's last section, which a cut of an over-long note keeps whole. */
export const PICK_UP_HEADING = '## Pick up from here';

/** The template's helpers. Values arrive escaped, one line where they stand in a line, and bounded. */
function createHandlebars(): typeof Handlebars {
  const instance = Handlebars.create();
  // `cell` and `clip` once escaped and cut raw values; templates written for them still render.
  instance.registerHelper('cell', (value: unknown) => String(value ?? ''));
  instance.registerHelper('clip', (value: unknown) => String(value ?? ''));
  instance.registerHelper('eq', (left: unknown, right: unknown) => left === right);
  instance.registerHelper('short', (value: unknown) => String(value ?? '').slice(0, 10));
  instance.registerHelper('statusIcon', (value: unknown) => statusIcon(String(value)));
  return instance;
}

/** The note's Markdown: the view rendered, blank-line runs folded, redacted once more, bounded. */
export async function renderTaskNote(
  record: TaskRecord,
  context: NoteContext & { templatePath?: string },
): Promise<string> {
  const template = await readFile(context.templatePath ?? DEFAULT_NOTE_TEMPLATE, 'utf8');
  const render = createHandlebars().compile(template, { noEscape: true });
  let text = render(noteView(record, context)).replace(/\n{3,}/g, '\n\n');
  if (context.redact) text = context.redact(text);
  // A custom template's own text passes the terminal rule too: nothing in the note steers a terminal.
  return boundDocument(showControls(text), NOTE_LIMITS.note, PICK_UP_HEADING);
}

/**
 * Renders and writes the note atomically, and records the decisions a COMPLETE task offers as pending memory
 * bank proposals in its run directory (redacted like the note); returns the note's path and digest.
 */
export async function writeTaskNote(
  record: TaskRecord,
  options: NoteContext & { agentRunnerDir: string; templatePath?: string },
): Promise<WrittenNote> {
  const text = await renderTaskNote(record, options);
  await mkdir(options.agentRunnerDir, { recursive: true });
  const file = path.join(options.agentRunnerDir, `task-${record.taskId}.md`);
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, text);
  await rename(temporary, file);
  await recordProposals(record.runDir, record.taskId, decisionsOffered(record), {
    now: new Date(record.finishedAt),
    ...(options.redact ? { redact: options.redact } : {}),
  }).catch((error: Error) => {
    throw new Error(`the note is written (${file}), its memory proposals could not be: ${error.message}`);
  });
  return { path: file, sha256: noteDigest(text) };
}
