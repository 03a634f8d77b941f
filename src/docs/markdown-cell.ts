/**
 * Text from the code (a description, a default) as a Markdown table cell: a `|` would end the cell, and a
 * `<name>` outside a code span would be read as an HTML tag and vanish (`<TASK-ID>`), so both are escaped
 * there; code spans are left as they are.
 */
export function markdownCell(text: string): string {
  return text
    .replace(/\n/g, ' ')
    .split(/(`[^`]*`)/)
    .map((piece, index) =>
      index % 2 === 1
        ? piece.replace(/\|/g, '\\|')
        : piece
            .replace(/(?<!\\)\|/g, '\\|')
            .replace(/</g, '&lt;')
            .replace(/>/g, '&gt;'),
    )
    .join('');
}
