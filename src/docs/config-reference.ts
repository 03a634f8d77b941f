/**
 * The configuration reference (docs/configuration.md): every key of agent-runner.yaml with its type, default,
 * the environment variable and flags that set it, and its one-line meaning, generated from the zod schema
 * (z.toJSONSchema: the input side for the types, the output side for the defaults) so the page cannot drift
 * from what is validated. A key without a description stops the generator: the meaning is written once, in
 * the schema.
 */
import * as z from 'zod';
import { formatDuration } from '../config/units.js';
import { markdownCell } from './markdown-cell.js';

/** A node of the JSON Schema zod writes, with the keys the configuration's meta adds (schema-parts.ts). */
interface JsonNode {
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  description?: string;
  default?: unknown;
  properties?: Record<string, JsonNode>;
  additionalProperties?: JsonNode | boolean;
  items?: JsonNode;
  anyOf?: JsonNode[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  unit?: 'duration' | 'size';
  defaultText?: string;
  keyName?: string;
  see?: string;
}

/** One row of the reference. */
export interface ConfigKey {
  key: string;
  type: string;
  default: string;
  setBy: string[];
  meaning: string;
}

/** One top-level group (`sandbox`) with its description and rows. */
export interface ConfigGroup {
  name: string;
  description: string;
  see?: string;
  keys: ConfigKey[];
}

/** What sets a key besides the file: its environment variables and flags, by dotted key. */
export interface KeySources {
  environment: Readonly<Record<string, string>>;
  flags: ReadonlyMap<string, readonly string[]>;
}

/** Thrown when the schema cannot be documented (a key without a description): says what to write where. */
export class UndocumentedKeysError extends Error {}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The groups of the schema, each key documented; throws {@link UndocumentedKeysError} naming every gap. */
export function configGroups(schema: z.ZodType, sources: KeySources): ConfigGroup[] {
  const input = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonNode;
  const output = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonNode;
  const missing: string[] = [];
  const groups = Object.entries(input.properties ?? {}).map(([name, node]) => {
    if (!node.description) missing.push(name);
    const keys: ConfigKey[] = [];
    const walker = new KeyWalker(sources, keys, missing);
    walker.group(node, output.properties?.[name] ?? {}, name);
    return { name, description: describeGroup(node), ...(node.see ? { see: node.see } : {}), keys };
  });
  if (missing.length)
    throw new UndocumentedKeysError(
      `Configuration keys without a description: ${missing.join(', ')}. Give each one line of meaning with ` +
        `.describe('...') where it is defined in src/config/ (docs/configuration.md is generated from it), ` +
        'then run `npm run docs:generate`.',
    );
  return groups;
}

/** A group's description, and for named keys of a closed set (`workers.<type>`) the names it takes. */
function describeGroup(node: JsonNode): string {
  const names = node.keyName && node.properties ? Object.keys(node.properties) : [];
  if (!names.length) return node.description ?? '';
  return `${node.description ?? ''} \`<${node.keyName}>\` is one of ${names.map((name) => `\`${name}\``).join(', ')}.`;
}

class KeyWalker {
  constructor(
    private readonly sources: KeySources,
    private readonly keys: ConfigKey[],
    private readonly missing: string[],
  ) {}

  /** The keys below an object node: its properties, or the one shape of its named keys (`<type>`). */
  group(node: JsonNode, output: JsonNode, path: string): void {
    const named = namedKeys(node);
    if (named) {
      this.group(named, namedKeys(output) ?? {}, `${path}.<${node.keyName ?? 'name'}>`);
      return;
    }
    for (const [key, inner] of Object.entries(node.properties ?? {}))
      this.key(inner, output.properties?.[key] ?? {}, `${path}.${key}`);
  }

  private key(node: JsonNode, output: JsonNode, path: string): void {
    if (isGroup(node)) return this.group(node, output, path);
    if (!node.description) this.missing.push(path);
    this.keys.push({
      key: path,
      type: typeText(node),
      default: defaultText(node, output),
      setBy: [...environmentOf(this.sources, path), ...(this.sources.flags.get(path) ?? [])],
      meaning: node.description ?? '',
    });
    const items = node.items;
    if (items && isGroup(items)) this.group(items, output.items ?? {}, `${path}[]`);
  }
}

/** An object documented key by key (not a map of free names such as `sandbox.env`). */
function isGroup(node: JsonNode): boolean {
  return node.type === 'object' && (node.properties !== undefined || node.keyName !== undefined);
}

/** The shape every key of a `keyName` object has: a record's values, or the first of its named properties. */
function namedKeys(node: JsonNode): JsonNode | undefined {
  if (node.keyName === undefined) return undefined;
  if (typeof node.additionalProperties === 'object') return node.additionalProperties;
  return Object.values(node.properties ?? {})[0] ?? {};
}

function environmentOf(sources: KeySources, path: string): string[] {
  return Object.entries(sources.environment)
    .filter(([, key]) => key === path)
    .map(([name]) => name);
}

function typeText(node: JsonNode): string {
  if (node.unit) return node.unit;
  if (node.enum) return node.enum.map((value) => `\`${String(value)}\``).join(' \\| ');
  if (node.anyOf) return [...new Set(node.anyOf.map(typeText))].join(' or ');
  const types = Array.isArray(node.type) ? node.type : node.type ? [node.type] : [];
  if (types.length > 1) return types.join(' or ');
  switch (types[0]) {
    case 'array':
      return node.items?.type === 'object' ? 'list of maps' : `list of ${typeText(node.items ?? {})}s`;
    case 'object':
      return 'map';
    case 'string':
      return node.format === 'uri' ? 'URL' : 'string';
    case 'integer':
    case 'number':
      return `${types[0]}${bounds(node)}`;
    default:
      return types[0] ?? 'any';
  }
}

function bounds(node: JsonNode): string {
  const parts: string[] = [];
  if (node.exclusiveMinimum !== undefined) parts.push(`> ${node.exclusiveMinimum}`);
  if (node.minimum !== undefined) parts.push(`≥ ${node.minimum}`);
  if (node.maximum !== undefined && node.maximum < MAX_SAFE) parts.push(`≤ ${node.maximum}`);
  return parts.length ? ` ${parts.join(', ')}` : '';
}

function defaultText(node: JsonNode, output: JsonNode): string {
  if (node.defaultText) return node.defaultText;
  const value = output.default ?? node.default;
  if (value === undefined) return 'none';
  if (node.unit === 'duration' && typeof value === 'number') return `\`${formatDuration(value)}\``;
  if (node.unit === 'size' && typeof value === 'number') return `\`${sizeText(value)}\``;
  if (Array.isArray(value))
    return value.length ? value.map((item) => `\`${String(item)}\``).join(', ') : '`[]`';
  if (typeof value === 'object') return `\`${JSON.stringify(value)}\``;
  return `\`${String(value)}\``;
}

/** A size as agent-runner.yaml writes it: `4g`, `16k`. */
function sizeText(bytes: number): string {
  for (const [unit, factor] of [
    ['g', 1024 ** 3],
    ['m', 1024 ** 2],
    ['k', 1024],
  ] as const)
    if (bytes % factor === 0) return `${bytes / factor}${unit}`;
  return String(bytes);
}

/** The reference as Markdown: a section per group, a table of its keys. */
export function configReferenceMarkdown(groups: readonly ConfigGroup[]): string {
  const lines: string[] = [];
  lines.push(groups.map((group) => `[\`${group.name}\`](#${group.name.toLowerCase()})`).join(' · '), '');
  for (const group of groups) {
    lines.push(`## \`${group.name}\``, '');
    lines.push(
      group.see ? `${group.description} More: [${group.see}](${group.see}).` : group.description,
      '',
    );
    lines.push('| Key | Type | Default | Also set by | Meaning |', '|---|---|---|---|---|');
    for (const key of group.keys)
      lines.push(
        `| \`${key.key}\` | ${markdownCell(key.type)} | ${markdownCell(key.default)} | ${key.setBy.map((source) => `\`${source}\``).join(', ')} | ${markdownCell(key.meaning)} |`,
      );
    lines.push('');
  }
  return lines.join('\n');
}
