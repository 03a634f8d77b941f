/**
 * A memory bank entry: one of the team's decisions, one Markdown file with a small YAML front matter, committed
 * in the repository (`memory.dir`) and reviewed like code. The file's name without `.md` is its id.
 */
import { parseDocument, stringify } from 'yaml';
import * as z from 'zod';

/** An entry is read by every worker run while `active`; an `archived` one is kept for the record only. */
export const MEMORY_STATUSES = ['active', 'archived'] as const;
export type MemoryStatus = (typeof MEMORY_STATUSES)[number];

/** The front matter of an entry file. */
export const memoryFrontMatterSchema = z.strictObject({
  title: z.string().trim().min(1).max(200),
  status: z.enum(MEMORY_STATUSES),
  /** Where it came from: `person`, or `task <ID>` for an accepted proposal. */
  source: z.string().trim().min(1).max(200),
  /** When it was written (ISO 8601). */
  created: z.string().trim().min(1).max(40),
});
export type MemoryFrontMatter = z.infer<typeof memoryFrontMatterSchema>;

/** One entry as read from its file. */
export interface MemoryBankEntry extends MemoryFrontMatter {
  /** The file's name without `.md`, e.g. `0003-queue-on-postgres`. */
  id: string;
  /** Its path in the repository (forward slashes, from the root). */
  file: string;
  /** The Markdown below the front matter, trimmed. */
  body: string;
}

/** An entry file larger than this is not read (entries are a few paragraphs). */
export const MAX_ENTRY_BYTES = 64 * 1024;
/** An entry file's name: a number, a slug, `.md`. */
export const ENTRY_FILE_NAME = /^(\d{4,})-[a-z0-9][a-z0-9-]{0,80}\.md$/;

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;

/** Parses an entry file's text; throws an Error saying what is wrong. */
export function parseEntry(text: string, file: string): MemoryBankEntry {
  const match = FRONT_MATTER.exec(text);
  if (!match) throw new Error(`${file}: no front matter (a first line \`---\`, YAML, a line \`---\`)`);
  // No aliases, no custom tags: the front matter is a handful of scalars.
  const document = parseDocument(match[1] ?? '', { schema: 'core', uniqueKeys: true });
  if (document.errors.length > 0) throw new Error(`${file}: front matter: ${document.errors[0]?.message}`);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 0 });
  } catch (error) {
    throw new Error(`${file}: front matter: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = memoryFrontMatterSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`${file}: front matter ${issue?.path.join('.') || '(top)'}: ${issue?.message}`);
  }
  const name = file.split('/').pop() ?? file;
  return { ...parsed.data, id: name.replace(/\.md$/, ''), file, body: text.slice(match[0].length).trim() };
}

/** The text of an entry file. */
export function formatEntry(front: MemoryFrontMatter, body: string): string {
  const ordered = { title: front.title, status: front.status, source: front.source, created: front.created };
  return `---\n${stringify(ordered, { lineWidth: 0 }).trimEnd()}\n---\n\n${body.trim()}\n`;
}

/** A file name's slug from a title: lower-case ASCII words joined by `-`, at most 50 characters. */
export function slugOf(title: string): string {
  const slug = title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50)
    .replace(/-+$/, '');
  return slug === '' ? 'entry' : slug;
}

/** The file name of a new entry: one more than the highest number in use. */
export function nextEntryName(existingNames: readonly string[], title: string): string {
  const numbers = existingNames.map((name) => Number(ENTRY_FILE_NAME.exec(name)?.[1] ?? 0));
  const next = Math.max(0, ...numbers) + 1;
  return `${String(next).padStart(4, '0')}-${slugOf(title)}.md`;
}

/** The memory folder's repository path with forward slashes and no trailing slash. */
export function memoryDirPath(dir: string): string {
  return dir
    .replace(/\\/g, '/')
    .replace(/^\.\/+/, '')
    .replace(/\/+$/, '');
}
