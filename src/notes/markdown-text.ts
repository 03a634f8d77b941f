/**
 * Text from data in a Markdown note, as data: the one escaping point of the task note and the project note.
 * Every text the runner did not write itself (the worker's commands, file names, commit subjects, final
 * message and output, and what the Meta-agent says, which may repeat them) goes into a code span, a fenced
 * block (its fence longer than any backtick run in the text) or one line of escaped Markdown and HTML, with its
 * terminal controls shown as escapes. So no data can start a line of the note, open an HTML tag or comment, or
 * look like one of the runner's rows or headings; the runner's structure is the template's alone. Each kind of
 * text has a documented size limit ({@link NOTE_LIMITS}), and a cut is said in words.
 */
import { showControls, stripTerminalSequences } from './terminal-text.js';

/** What the note shows of each kind of text at most (docs/evidence.md: "What the worker writes is shown, never obeyed"). */
export const NOTE_LIMITS = {
  /** Characters of one line of prose or a table cell (a reason, a description, a comment). */
  text: 300,
  /** Characters of a title (the plan's, a subtask's). */
  title: 200,
  /** Characters of a short label the worker reports (a command's status). */
  label: 40,
  /** Characters of a command, a path or a commit subject. */
  code: 200,
  /** Characters of a question, an error message's first line (its rest is a block), a path of the runner's. */
  longLine: 1_000,
  /** Characters of a multi-line text in a fenced block: the worker's final message, an output tail. */
  block: 4_000,
  /** Lines of the diff stat. */
  diffStatLines: 60,
  /** Items of one list: commits, uncommitted paths, scope violations, criteria, DoD checks, decision lines. */
  listItems: 50,
  /** Commands of one run. */
  runCommands: 30,
  /** Errors, and reasons it was refused, of one run. */
  runReasons: 10,
  /** Failing checks whose output tail is shown (DoD, criteria, set-up). */
  outputTails: 5,
  /** Worker runs in the timeline (the latest ones). */
  runs: 10,
  /**
   * Characters of the whole note: a last bound, above a note of the default template with every other
   * limit reached (tested), so it only cuts a custom template's note.
   */
  note: 512 * 1024,
} as const;

/** Where a code span stands: in running text, or in a table cell (where a pipe must be escaped even in code). */
export type CodePlace = 'text' | 'table';

/** Which part of a cut text or list is shown. */
export type ShownPart = 'first' | 'last' | 'first and the last';

/** A number as the note writes it: `1,048,576`. */
const count = (value: number) => value.toLocaleString('en-US');

/** A cut said in words: `… [cut: 1,048,576 characters, showing the first 2,000]`. */
export function cutNotice(total: number, shown: number, unit: string, part: ShownPart = 'first'): string {
  return part === 'first and the last'
    ? `… [cut: ${count(total)} ${unit}, showing the first ${count(shown - 1)} and the last]`
    : `… [cut: ${count(total)} ${unit}, showing the ${part} ${count(shown)}]`;
}

/** `text` cut to at most `max` characters (never inside a surrogate pair), and the cut in words when cut. */
export function cutText(text: string, max: number): { text: string; notice: string } {
  if (text.length <= max) return { text, notice: '' };
  const code = text.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return { text: text.slice(0, end), notice: cutNotice(text.length, end, 'characters') };
}

/** The first `max` items of a list, and the cut in words when there were more. */
export function cutList<T>(items: readonly T[], max: number, unit: string): { items: T[]; notice: string } {
  if (items.length <= max) return { items: [...items], notice: '' };
  return { items: items.slice(0, max), notice: cutNotice(items.length, max, unit) };
}

/** The last `max` items of a list, and the cut in words when there were more. */
export function lastOfList<T>(
  items: readonly T[],
  max: number,
  unit: string,
): { items: T[]; notice: string } {
  if (items.length <= max) return { items: [...items], notice: '' };
  return { items: items.slice(-max), notice: cutNotice(items.length, max, unit, 'last') };
}

/** One line: every run of whitespace (newlines included) becomes one space. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The longest run of backticks in `text` (0 when there is none). */
function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const match of text.matchAll(/`+/g)) longest = Math.max(longest, match[0].length);
  return longest;
}

const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/;
const WORD_CHARACTER = /[\p{L}\p{N}]/u;
// Everything inline Markdown or HTML would read as markup: escapes, code, emphasis, strikethrough, table
// pipes, math, entities, tags and comments, and a link's `](` / `][`.
const INLINE_MARKUP = /[\\`*_~|$&<>]|\](?=[([])/g;
// What makes a line (or a list item's content) a block: a heading, a quote, a list, a table row, a task box,
// a link reference definition.
const BLOCK_START = /^(?:[#>+\-=[|]|\d+[.)])/;

/** One character of inline markup, escaped (`position` in `whole` decides for `\` and `_`). */
function escapeMarkup(character: string, position: number, whole: string): string {
  const before = whole[position - 1] ?? '';
  const after = whole[position + 1] ?? '';
  switch (character) {
    case '&':
      return '&amp;';
    case '<':
      return '&lt;';
    case '>':
      return '&gt;';
    case '\\':
      // A backslash escapes only punctuation; at the end, the template's next character may be some.
      return after === '' || ASCII_PUNCTUATION.test(after) ? '\\\\' : '\\';
    case '_':
      // Inside a word an underscore never emphasises (snake_case stays readable).
      return WORD_CHARACTER.test(before) && WORD_CHARACTER.test(after) ? '_' : '\\_';
    default:
      return `\\${character}`;
  }
}

/** A line whose start would make a block (a heading, a list...) with that character escaped. */
function escapeBlockStart(line: string): string {
  const start = BLOCK_START.exec(line);
  if (!start) return line;
  // The character that makes the block: the first one, or the `.`/`)` of an ordered list's number.
  const at = /^\d/.test(start[0]) ? start[0].length - 1 : 0;
  return `${line.slice(0, at)}\\${line.slice(at)}`;
}

/** HTML's special characters as entities: no tag, comment or entity of the text survives. */
function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One line of text escaped for Markdown and HTML: it renders as itself, never as markup or structure. */
export function escapeInline(text: string): string {
  return escapeBlockStart(text.replace(INLINE_MARKUP, escapeMarkup));
}

/** Data as one line of escaped prose, at most `max` characters of it (the cut said in words). */
export function inlineText(text: string, max: number = NOTE_LIMITS.text): string {
  const cut = cutText(oneLine(text), max);
  const shown = escapeInline(showControls(cut.text, 'one_line'));
  return cut.notice ? `${shown} ${cut.notice}` : shown;
}

/** Data as one inline code span, at most `max` characters of it (the cut said in words, outside the span). */
export function codeSpan(text: string, max: number = NOTE_LIMITS.code, place: CodePlace = 'text'): string {
  const cut = cutText(oneLine(text), max);
  if (cut.text === '') return '—';
  let content = showControls(cut.text, 'one_line');
  if (place === 'table') content = content.replace(/\|/g, '\\|');
  const fence = '`'.repeat(longestBacktickRun(content) + 1);
  // A span's content may not begin or end with a backtick next to its fence: a space on both sides is dropped.
  const padded = content.startsWith('`') || content.endsWith('`') ? ` ${content} ` : content;
  const span = `${fence}${padded}${fence}`;
  return cut.notice ? `${span} ${cut.notice}` : span;
}

/** Data as text of an HTML element (a `<summary>`): one line, `&`, `<` and `>` as entities. */
export function htmlText(text: string, max: number = NOTE_LIMITS.text): string {
  const cut = cutText(oneLine(text), max);
  const shown = escapeHtml(showControls(cut.text, 'one_line'));
  return cut.notice ? `${shown} ${cut.notice}` : shown;
}

/**
 * Text the person wrote (the PRD's first paragraph) as one line of Markdown: its inline Markdown kept
 * (emphasis, links, code), but no HTML (tags and comments as entities), nothing that starts a block and no
 * terminal control.
 */
export function paragraphText(text: string, max: number = NOTE_LIMITS.block): string {
  const cut = cutText(oneLine(text), max);
  const shown = escapeBlockStart(escapeHtml(showControls(cut.text, 'one_line')));
  return cut.notice ? `${shown} ${cut.notice}` : shown;
}

/**
 * Multi-line data as a fenced block (its lines kept, its fence longer than any backtick run inside, so nothing
 * in it can close it), at most `max` characters; the cut is said on the line after the block.
 */
export function fencedBlock(text: string, max: number = NOTE_LIMITS.block): string {
  const cut = cutText(text.replace(/\r\n/g, '\n').replace(/\n+$/, ''), max);
  const content = showControls(cut.text, 'lines');
  const fence = '`'.repeat(Math.max(3, longestBacktickRun(content) + 1));
  const block = `${fence}text\n${content}\n${fence}`;
  return cut.notice ? `${block}\n${cut.notice}` : block;
}

/**
 * Lines of data as a fenced block: at most `maxLines`, the first ones and the last (a diff stat's totals),
 * each line at most `NOTE_LIMITS.code` characters.
 */
export function fencedLines(text: string, maxLines: number): string {
  const lines = text.replace(/\r\n/g, '\n').replace(/\n+$/, '').split('\n');
  const room = maxLines * (NOTE_LIMITS.code + 1);
  if (lines.length <= maxLines) return fencedBlock(lines.join('\n'), room);
  const shown = [...lines.slice(0, maxLines - 1), lines.at(-1) ?? ''];
  const notice = cutNotice(lines.length, maxLines, 'lines', 'first and the last');
  return `${fencedBlock(shown.join('\n'), room)}\n${notice}`;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * The fenced blocks of a Markdown document as CommonMark reads them: for each line whether it is inside one
 * (its fences included), and the fence of a block still open after the last line.
 */
function scanFences(lines: readonly string[]): { inside: boolean[]; open: string | null } {
  let open: string | null = null;
  const inside = lines.map((line) => {
    const fence = FENCE.exec(line)?.[1];
    if (open === null) {
      if (fence) open = fence;
      return open !== null;
    }
    if (fence && fence[0] === open[0] && fence.length >= open.length && line.trim() === fence) open = null;
    return true;
  });
  return { inside, open };
}

/** What closes the fenced block and the `<details>` elements still open after `lines`. */
function closersOf(lines: readonly string[]): string[] {
  const fences = scanFences(lines);
  let details = 0;
  lines.forEach((line, index) => {
    if (fences.inside[index]) return;
    if (line.startsWith('<details>')) details += 1;
    if (line.startsWith('</details>')) details = Math.max(0, details - 1);
  });
  return [...(fences.open === null ? [] : [fences.open]), ...Array<string>(details).fill('</details>')];
}

/**
 * A whole Markdown document within `max` characters: when longer, it is cut at a line end, a fenced block or
 * `<details>` the cut left open is closed, the cut is said in words, and the section under the last
 * `closingHeading` outside fenced blocks (the runner's "Pick up from here") is kept whole.
 */
export function boundDocument(text: string, max: number, closingHeading: string): string {
  if (text.length <= max) return text;
  const lines = text.split('\n');
  const { inside } = scanFences(lines);
  const headingAt = lines.findLastIndex((line, index) => !inside[index] && line === closingHeading);
  const closing = headingAt >= 0 ? lines.slice(headingAt) : [];
  // A closing section that would take half the room is cut with the rest.
  const tail = closing.join('\n').length < max / 2 ? closing : [];
  const head = tail.length > 0 ? lines.slice(0, headingAt).join('\n') : text;
  // Room for the tail, the closers and the notice (never longer than one naming the whole length twice).
  const reserve = tail.join('\n').length + cutNotice(text.length, text.length, 'characters').length + 100;
  const kept = head.slice(0, Math.max(0, max - reserve)).split('\n');
  kept.pop();
  const notice = cutNotice(text.length, kept.join('\n').length, 'characters');
  return [...kept, ...closersOf(kept), '', notice, '', ...tail].join('\n');
}

/** A command's output tail for a `<details>` block: fenced, without its terminal sequences. */
export function outputDetails(summary: string, outputTail: string): { summary: string; outputTail: string } {
  return { summary, outputTail: fencedBlock(stripTerminalSequences(outputTail)) };
}
