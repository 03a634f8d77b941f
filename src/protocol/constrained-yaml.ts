/**
 * Constrained YAML: the subset the Meta-agent speaks. Allowed: one document (at most one leading `---`),
 * comments, plain/quoted scalars, block maps, block sequences, block scalars `|` and `>`, the empty flow
 * collections `[]` and `{}` (the only way to write an empty list or map) and one-level flow lists of scalars
 * (`[a, b]`). Refused, each with its line and column: anchors, aliases, tags, directives, several documents,
 * the `...` end marker, tabs used for indentation, duplicate keys, complex (`?`) keys, flow maps with content
 * and nested flow collections.
 *
 * Why refuse so much: every refused feature either changes what a value means far from where it is
 * written (anchors, aliases, tags) or makes a reply ambiguous (several documents). A small subset is easy
 * for a model to hit and for a person to read in the logs.
 */
import {
  type Document,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  Parser,
  stringify,
  visit,
} from 'yaml';
import type { ProtocolIssue } from './protocol-issue.js';

/** A parsed constrained-YAML document: its plain value and a way to point at a path in the source. */
export interface ConstrainedYamlDocument {
  value: unknown;
  /**
   * Line/column (1-based, offset into the reply) of the value at `path`, or of the nearest ancestor that
   * exists when the path is missing. With `key: true`, the position of the last key itself (for unknown keys).
   */
  locate(
    path: readonly PropertyKey[],
    options?: { key?: boolean },
  ): { line: number; column: number } | undefined;
}

export type ReadConstrainedYamlResult =
  { ok: true; document: ConstrainedYamlDocument } | { ok: false; issues: ProtocolIssue[] };

interface CstToken {
  type: string;
  offset: number;
  source?: string;
  items?: unknown[];
}

function isCstToken(value: unknown): value is CstToken {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as CstToken).type === 'string' &&
    typeof (value as CstToken).offset === 'number'
  );
}

/** Visits every token of the concrete syntax tree, whatever its nesting (props, seps, items, ends). */
function walkCst(value: unknown, onToken: (token: CstToken) => void): void {
  if (Array.isArray(value)) {
    for (const item of value) walkCst(item, onToken);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (isCstToken(value)) onToken(value);
  for (const inner of Object.values(value)) {
    if (typeof inner === 'object' && inner !== null) walkCst(inner, onToken);
  }
}

function short(source: string | undefined): string {
  const text = (source ?? '').split('\n')[0] ?? '';
  return text.length > 30 ? `${text.slice(0, 30)}...` : text;
}

/** Syntax features refused by the subset, found on the CST so each is reported where it is written. */
function refusedSyntax(
  text: string,
  at: (offset: number) => { line: number; column: number },
): ProtocolIssue[] {
  const issues: ProtocolIssue[] = [];
  let documents = 0;
  for (const token of new Parser().parse(text)) {
    if (token.type === 'document') {
      documents += 1;
      if (documents === 2) {
        issues.push({
          ...at(token.offset),
          message:
            'a second YAML document starts here; send exactly one document (at most one leading `---`)',
        });
      }
    } else if (token.type === 'doc-end') {
      issues.push({ ...at(token.offset), message: 'the document end marker `...` is refused; remove it' });
    } else if (token.type === 'directive') {
      issues.push({
        ...at(token.offset),
        message: `the directive \`${short(token.source)}\` is refused; remove it`,
      });
    }
    walkCst(token, (inner) => {
      if (inner.type === 'anchor') {
        issues.push({
          ...at(inner.offset),
          message: `the anchor \`${short(inner.source)}\` is refused: anchors and aliases are not allowed, write each value out in full`,
        });
      } else if (inner.type === 'alias') {
        issues.push({
          ...at(inner.offset),
          message: `the alias \`${short(inner.source)}\` is refused: anchors and aliases are not allowed, write the value out in full`,
        });
      } else if (inner.type === 'tag') {
        issues.push({
          ...at(inner.offset),
          message: `the tag \`${short(inner.source)}\` is refused: write the plain value without a tag (quote it if it must stay a string)`,
        });
      } else if (inner.type === 'flow-collection' && !isAllowedFlowCollection(inner)) {
        issues.push({
          ...at(inner.offset),
          message:
            'this flow collection is refused: only `[]`, `{}` and one-level lists of scalars like `[a, b]` are allowed; write a block map or a block sequence (`- item` lines)',
        });
      }
    });
  }
  return issues;
}

interface FlowItem {
  key?: unknown;
  sep?: { type: string }[];
  value?: { type: string };
}

/**
 * Empty `[]`/`{}` are the only way to write an empty collection, and models write short lists as `[a, b]`
 * all the time: both are unambiguous, so they are allowed. Flow maps with content and nested flow
 * collections are refused: they are where flow syntax stops being obvious to read.
 */
function isAllowedFlowCollection(token: CstToken): boolean {
  const items = (token.items ?? []) as FlowItem[];
  if (items.length === 0) return true;
  const opener = (token as { start?: { source?: string } }).start?.source;
  if (opener !== '[') return false;
  return items.every(
    (item) =>
      item.key === undefined &&
      !(item.sep ?? []).some((separator) => separator.type === 'map-value-ind') &&
      (item.value === undefined ||
        item.value.type === 'scalar' ||
        item.value.type.endsWith('-quoted-scalar')),
  );
}

const PARSER_MESSAGES: Record<string, string> = {
  TAB_AS_INDENT: 'a tab is used for indentation; indent with spaces (2 per level)',
  BAD_INDENT: 'bad indentation; indent with 2 spaces per level',
};

function scalarKey(node: unknown): string | undefined {
  if (isScalar(node)) return String(node.value);
  return undefined;
}

/** Duplicate and complex keys, found on the composed document. */
function refusedKeys(
  document: Document,
  at: (offset: number) => { line: number; column: number },
): ProtocolIssue[] {
  const issues: ProtocolIssue[] = [];
  visit(document, {
    Map(_key, map) {
      const seen = new Map<string, number>();
      for (const pair of map.items) {
        const keyNode = pair.key as Node | null;
        const key = scalarKey(keyNode);
        const offset = keyNode?.range?.[0] ?? map.range?.[0] ?? 0;
        if (key === undefined) {
          issues.push({
            ...at(offset),
            message: 'complex keys (`? key`, maps or lists as keys) are refused; use a plain word as key',
          });
          continue;
        }
        const first = seen.get(key);
        if (first !== undefined) {
          issues.push({
            ...at(offset),
            message: `duplicate key \`${key}\` (first written on line ${at(first).line}); keep one`,
          });
        } else {
          seen.set(key, offset);
        }
      }
    },
  });
  return issues;
}

function dedupe(issues: ProtocolIssue[]): ProtocolIssue[] {
  const seen = new Set<string>();
  return issues.filter((issue) => {
    const key = `${issue.line}:${issue.column}:${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Reads one constrained-YAML document. `lineOffset` shifts reported lines so they point into the model's
 * whole reply when the document was extracted from a fenced block.
 */
export function readConstrainedYaml(
  text: string,
  options: { lineOffset?: number } = {},
): ReadConstrainedYamlResult {
  const lineOffset = options.lineOffset ?? 0;
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { uniqueKeys: false, lineCounter, prettyErrors: false });
  const at = (offset: number) => {
    const position = lineCounter.linePos(offset);
    return { line: position.line + lineOffset, column: position.col };
  };

  const issues = refusedSyntax(text, at);
  for (const error of document.errors) {
    if (error.code === 'MULTIPLE_DOCS') continue; // reported above with a better message
    const message =
      PARSER_MESSAGES[error.code] ??
      `invalid YAML: ${error.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`;
    issues.push({ ...at(error.pos[0]), message });
  }
  if (document.errors.length === 0) issues.push(...refusedKeys(document, at));
  issues.sort(
    (left, right) => (left.line ?? 0) - (right.line ?? 0) || (left.column ?? 0) - (right.column ?? 0),
  );
  if (issues.length > 0) return { ok: false, issues: dedupe(issues) };

  const locate = (path: readonly PropertyKey[], locateOptions: { key?: boolean } = {}) => {
    let node: unknown = document.contents;
    let best = isNodeWithRange(node) ? node.range[0] : undefined;
    for (const [index, segment] of path.entries()) {
      let next: unknown;
      if (isMap(node)) {
        const pair = node.items.find((item) => isPair(item) && scalarKey(item.key) === String(segment));
        if (!pair) break;
        if (isNodeWithRange(pair.key)) best = pair.key.range[0];
        if (locateOptions.key && index === path.length - 1) break;
        next = pair.value;
      } else if (isSeq(node) && typeof segment === 'number') {
        next = node.items[segment];
      } else {
        break;
      }
      if (!isNodeWithRange(next)) break;
      best = next.range[0];
      node = next;
    }
    return best === undefined ? undefined : at(best);
  };
  // Aliases were refused above, so toJS never has to resolve one.
  return { ok: true, document: { value: document.toJS({ maxAliasCount: 0 }), locate } };
}

function isNodeWithRange(value: unknown): value is { range: [number, number, number] } {
  return typeof value === 'object' && value !== null && Array.isArray((value as { range?: unknown }).range);
}

/**
 * Writes a plain value (maps, arrays, strings, numbers, booleans, null) in the allowed subset: 2-space
 * indentation, block collections, `|` for multi-line strings, no anchors, no tags, no line folding.
 * The output is always accepted by `readConstrainedYaml`.
 */
export function writeConstrainedYaml(value: unknown): string {
  return stringify(value, {
    indent: 2,
    indentSeq: true,
    lineWidth: 0,
    minContentWidth: 0,
    aliasDuplicateObjects: false,
    blockQuote: 'literal',
    defaultKeyType: 'PLAIN',
    defaultStringType: 'PLAIN',
    directives: false,
    flowCollectionPadding: false,
  });
}
