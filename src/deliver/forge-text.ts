/**
 * Text of the worker's or the Meta-agent's in a pull/merge request, made inert for the forge. The Markdown
 * escaping of the note (src/notes/markdown-text.ts) already keeps links, images, HTML and structure out; a
 * forge reads more than Markdown in the rendered text: `@name` and `@org/team` notify people, `#123`,
 * `GH-123`, `owner/repo#1`, `owner/repo@sha` and a bare commit hash become references, a bare URL or `www.`
 * an autolink, and on GitLab `!12`, `%milestone`, `~label`, `$snippet` and `&epic` too. A word joiner (U+2060,
 * invisible, no width) after each sigil, inside each URL scheme's `://` and `www.`, and every six characters of
 * a hex run breaks every such pattern while the text reads the same. Broken Unicode (a lone surrogate) becomes
 * U+FFFD, so the body is valid UTF-8 for the forge's API.
 */

import { wellFormed } from '../notes/terminal-text.js';

const WORD_JOINER = '\u2060';

/** `text` with nothing a forge reads as a mention, a reference or an autolink; the same to a reader. */
export function inertForForge(text: string): string {
  return wellFormed(text)
    .replace(/[@#!%~$&]/g, `$&${WORD_JOINER}`)
    .replace(/\b(gh)-(?=\d)/gi, `$1${WORD_JOINER}-`)
    .replace(/:\/\//g, `:${WORD_JOINER}//`)
    .replace(/\b(www)\./gi, `$1${WORD_JOINER}.`)
    .replace(/[0-9a-f]{7,}/gi, (hex: string) => hex.replace(/[0-9a-f]{6}(?=[0-9a-f])/gi, `$&${WORD_JOINER}`));
}
