/**
 * Finding the YAML in a model's reply. Models often wrap the document in a fenced block or add a sentence
 * around it. The rule is deliberately narrow so that nothing is guessed:
 * - exactly one fenced block (``` or ~~~, language `yaml`, `yml` or none): its content is the document,
 *   prose around it is ignored;
 * - no fence at all: the whole reply is the document, and it must start like one (a comment, `---` or a
 *   `key:` line), so that a sentence before unfenced YAML is reported instead of parsed as a key;
 * - anything else (two fenced blocks, a fence that is never closed, a block in another language) is an error.
 */
import type { ProtocolIssue } from './protocol-issue.js';

/** The document text and where it starts in the reply, so positions can be reported against the reply. */
export interface ExtractedYaml {
  text: string;
  /** Lines of the reply before the document's first line (add it to a 1-based line of `text`). */
  lineOffset: number;
  fenced: boolean;
}

export type ExtractYamlResult = { ok: true; yaml: ExtractedYaml } | { ok: false; issues: ProtocolIssue[] };

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[ \t]*$/;
const YAML_LANGUAGES = new Set(['', 'yaml', 'yml']);
// A comment, `---`, a list item (refused later with a clearer message) or an identifier-like key: the protocol's keys are all snake_case words.
const DOCUMENT_START = /^(---(\s|$)|#|-(\s|$)|[A-Za-z_][\w-]*:(\s|$))/;

interface FencedBlock {
  openLine: number;
  closeLine: number | null;
  language: string;
}

function findFencedBlocks(lines: readonly string[]): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let open: { line: number; marker: string; language: string } | null = null;
  lines.forEach((line, index) => {
    const match = FENCE.exec(line);
    if (!match) return;
    const marker = match[1] ?? '';
    const language = (match[2] ?? '').toLowerCase();
    if (open === null) {
      open = { line: index, marker, language };
    } else if (language === '' && marker[0] === open.marker[0] && marker.length >= open.marker.length) {
      blocks.push({ openLine: open.line, closeLine: index, language: open.language });
      open = null;
    }
  });
  const unclosed = open as { line: number; language: string } | null;
  if (unclosed !== null)
    blocks.push({ openLine: unclosed.line, closeLine: null, language: unclosed.language });
  return blocks;
}

function preview(line: string): string {
  const trimmed = line.trim();
  return trimmed.length > 40 ? `${trimmed.slice(0, 40)}...` : trimmed;
}

/** Extracts the one YAML document of a reply, or says precisely why it cannot. */
export function extractYaml(reply: string): ExtractYamlResult {
  const normalized = reply.replace(/\r\n?/g, '\n');
  const lines = normalized.split('\n');
  const blocks = findFencedBlocks(lines);

  if (blocks.length === 0) {
    const first = lines.findIndex((line) => line.trim() !== '');
    if (first === -1) {
      return { ok: false, issues: [{ message: 'the reply is empty; send one YAML document' }] };
    }
    const firstLine = lines[first] ?? '';
    if (!DOCUMENT_START.test(firstLine)) {
      return {
        ok: false,
        issues: [
          {
            line: first + 1,
            column: 1,
            message: `text before the YAML document ("${preview(firstLine)}"); reply with the YAML document only, or put it in one \`\`\`yaml fenced block`,
          },
        ],
      };
    }
    return { ok: true, yaml: { text: normalized, lineOffset: 0, fenced: false } };
  }

  if (blocks.length > 1) {
    const where = blocks.map((block) => block.openLine + 1).join(', ');
    return {
      ok: false,
      issues: [
        {
          line: (blocks[1]?.openLine ?? 0) + 1,
          column: 1,
          message: `the reply has ${blocks.length} fenced blocks (starting on lines ${where}); send exactly one YAML document`,
        },
      ],
    };
  }

  const block = blocks[0] as FencedBlock;
  if (block.closeLine === null) {
    return {
      ok: false,
      issues: [
        {
          line: block.openLine + 1,
          column: 1,
          message:
            'a fenced block is opened here but never closed; close it with ``` or send the YAML without a fence',
        },
      ],
    };
  }
  if (!YAML_LANGUAGES.has(block.language)) {
    return {
      ok: false,
      issues: [
        {
          line: block.openLine + 1,
          column: 1,
          message: `the fenced block is marked \`${block.language}\`; the protocol is YAML: use \`\`\`yaml`,
        },
      ],
    };
  }
  const text = lines.slice(block.openLine + 1, block.closeLine).join('\n');
  return { ok: true, yaml: { text: `${text}\n`, lineOffset: block.openLine + 1, fenced: true } };
}
