/**
 * Text from data, made safe to show on a terminal (or in a log a person reads with `cat`): every character
 * that could steer the terminal (ESC and the rest of C0, DEL, C1) and every bidi override or isolate is shown
 * as a visible escape (`\x1b`, `\x9b`, `\u202e`). A worker-chosen command, file name, commit subject or
 * message can then never write the clipboard (OSC 52), set the window title (OSC 0), plant a hidden link
 * (OSC 8), clear the screen (CSI 2J) or reorder what a line says. The result holds no such character, so
 * showing it again changes nothing. The runner's own cursor moves never pass through here: they are made by
 * {@link cursorSequence} from coded moves, not from text.
 */

import { stripVTControlCharacters } from 'node:util';

/** Whose line structure a text's newlines are: `lines` keeps `\n` (a multi-line text), `one_line` shows it too. */
export type TextLayout = 'lines' | 'one_line';

/** A move of the cursor the runner itself makes (the project progress redraws its lines in place). */
export type CursorMove = { kind: 'up'; lines: number } | { kind: 'clear_line' } | { kind: 'clear_below' };

/** One piece of a redraw: text (data, shown safe) or one of the runner's own cursor moves. */
export type RedrawPiece = string | CursorMove;

// C0 except TAB and LF, DEL, C1, the bidi embeddings/overrides (U+202A–U+202E) and isolates (U+2066–U+2069).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROLS_KEEPING_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// The same, LF included.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROLS_ON_ONE_LINE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
// In valid JSON text a raw C0 character can only be whitespace between tokens (JSON.stringify escapes the
// rest); DEL, C1 and the bidi controls are valid raw inside a string and JSON.stringify leaves them so.
const CONTROLS_JSON_LEAVES_RAW = /[\r\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const ESCAPE = '\u001b';
// Half a surrogate pair: not a character, and not valid UTF-8 (a forge's API refuses it, a file gets U+FFFD).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `text` with each lone surrogate as U+FFFD (what `String.prototype.toWellFormed` does). */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\uFFFD');
}

/** The visible escape of one control character: `\x1b` below U+0100, `\u202e` above. */
function visibleEscape(character: string): string {
  const code = character.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * Text with every terminal control shown as a visible escape (`\t` stays, `\n` stays unless `one_line`), and
 * broken Unicode (a lone surrogate) as U+FFFD.
 */
export function showControls(text: string, layout: TextLayout = 'lines'): string {
  return wellFormed(text).replace(
    layout === 'lines' ? CONTROLS_KEEPING_LINES : CONTROLS_ON_ONE_LINE,
    visibleEscape,
  );
}

/**
 * A tool's output (a check's or a set-up command's output tail, an error line read from it) as a person reads
 * it: its colour and formatting sequences (SGR, cursor moves, OSC titles and links) removed, since a test
 * runner's colours are noise once they are not on its terminal. Node's own `stripVTControlCharacters` does
 * the matching (the pattern of the `ansi-regex` package, kept with Node). What is left of a control (a lone
 * ESC, a BEL, C1, a bidi override) is still shown as a visible escape wherever the text is shown, so no
 * output can steer the terminal or hide text. Commands, paths and messages are never stripped: a sequence in
 * a command the worker chose is shown, as evidence of what it ran. The raw logs and the journal keep the
 * output as it was.
 */
export function stripTerminalSequences(text: string): string {
  return stripVTControlCharacters(text);
}

/**
 * Valid JSON text (one `--json` line, a journal line) with the controls JSON.stringify leaves raw written as
 * JSON escapes (`\u009b`, `\u202e`) and a carriage return between tokens dropped: still valid JSON that parses
 * to the very same value.
 */
export function showControlsInJson(json: string): string {
  return json.replace(CONTROLS_JSON_LEAVES_RAW, (character) =>
    character === '\r' ? '' : `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Whether `text` is one JSON value (so its controls must stay JSON escapes, never `\x..`). */
export function isJsonText(text: string): boolean {
  const trimmed = text.trim();
  if (!(trimmed.startsWith('{') || trimmed.startsWith('['))) return false;
  try {
    JSON.parse(trimmed);
    return true;
  } catch {
    return false;
  }
}

/** What is printed for `text` on a terminal: JSON stays JSON (its escapes are data), anything else is text. */
export function printableText(text: string): string {
  if (text.search(CONTROLS_KEEPING_LINES) === -1) return text;
  return isJsonText(text) ? showControlsInJson(text) : showControls(text);
}

/** The escape sequence of one of the runner's own cursor moves: the only place one is made. */
export function cursorSequence(move: CursorMove): string {
  switch (move.kind) {
    case 'up':
      return move.lines > 0 ? `${ESCAPE}[${Math.floor(move.lines)}A` : '';
    case 'clear_line':
      return `${ESCAPE}[2K`;
    case 'clear_below':
      return `${ESCAPE}[J`;
  }
}
