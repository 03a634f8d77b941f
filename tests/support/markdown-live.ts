/**
 * What a Markdown renderer would read as markup in a note: the lines outside fenced blocks, with code spans
 * taken out. A plain CommonMark reading of the two constructs that make text inert (fences: a run of at least
 * three backticks or tildes closed by a run as long of the same character; code spans: a backtick run closed
 * by a run of the same length, not after a backslash), written here so the tests do not trust the escaper
 * they check.
 */

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** The lines of `markdown` outside fenced blocks (the fences' own lines excluded). */
export function linesOutsideFences(markdown: string): string[] {
  const live: string[] = [];
  let open: string | null = null;
  for (const line of markdown.split('\n')) {
    const fence = FENCE.exec(line)?.[1];
    if (open === null) {
      if (fence) open = fence;
      else live.push(line);
    } else if (fence && fence[0] === open[0] && fence.length >= open.length && line.trim() === fence) {
      open = null;
    }
  }
  return live;
}

/** `line` with every code span taken out (an unclosed backtick run stays as text). */
export function withoutCodeSpans(line: string): string {
  let out = '';
  let index = 0;
  while (index < line.length) {
    if (line[index] === '\\' && index + 1 < line.length) {
      out += line.slice(index, index + 2);
      index += 2;
      continue;
    }
    if (line[index] !== '`') {
      out += line[index];
      index += 1;
      continue;
    }
    const run = /^`+/.exec(line.slice(index))?.[0] ?? '`';
    const close = new RegExp(`(?<!\`)${run}(?!\`)`, 'g');
    close.lastIndex = index + run.length;
    const found = close.exec(line);
    if (!found) {
      out += run;
      index += run.length;
      continue;
    }
    index = found.index + run.length;
  }
  return out;
}

/** The note as a renderer reads its markup: lines outside fences, code spans taken out. */
export function liveMarkdown(markdown: string): string[] {
  return linesOutsideFences(markdown).map(withoutCodeSpans);
}
