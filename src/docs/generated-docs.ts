/**
 * The generated parts of docs/: each lives between two markers in its page, so the page keeps its hand-written
 * introduction and the part below is exactly what the code generates. `npm run docs:generate` writes them;
 * tests/unit/docs-generated.test.ts fails when a committed page differs.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ENVIRONMENT_KEYS } from '../config/load.js';
import { configSchema } from '../config/schema.js';
import { commandReferenceMarkdown } from './command-reference.js';
import { configGroups, configReferenceMarkdown } from './config-reference.js';
import { configFlags, referenceProgram } from './reference-program.js';

/** A generated part of a page. */
export interface GeneratedPart {
  /** The page, relative to the repository root. */
  file: string;
  /** The part's name in its markers. */
  name: string;
  render(): string;
}

export const GENERATED_PARTS: readonly GeneratedPart[] = [
  {
    file: 'docs/configuration.md',
    name: 'configuration keys',
    render: () => {
      const flags = configFlags(referenceProgram());
      return configReferenceMarkdown(configGroups(configSchema, { environment: ENVIRONMENT_KEYS, flags }));
    },
  },
  {
    file: 'docs/commands.md',
    name: 'commands',
    render: () => commandReferenceMarkdown(referenceProgram()),
  },
];

const begin = (name: string) =>
  `<!-- BEGIN GENERATED: ${name}. Written by \`npm run docs:generate\` from the code; edit the code, not this. -->`;
const end = (name: string) => `<!-- END GENERATED: ${name} -->`;

/** `page` with the part between its markers replaced by `content`; throws when the markers are missing. */
export function withGeneratedPart(page: string, file: string, name: string, content: string): string {
  const start = page.indexOf(begin(name));
  const stop = page.indexOf(end(name));
  if (start < 0 || stop < start)
    throw new Error(
      `${file} has no generated part "${name}": put these two lines where it goes:\n${begin(name)}\n${end(name)}`,
    );
  return `${page.slice(0, start)}${begin(name)}\n\n${content.trimEnd()}\n\n${page.slice(stop)}`;
}

/** Each generated page as it is in the repository and as the code generates it. */
export async function generatedPages(
  root: string,
): Promise<{ file: string; current: string; generated: string }[]> {
  const pages = new Map<string, { current: string; generated: string }>();
  for (const part of GENERATED_PARTS) {
    const page = pages.get(part.file) ?? {
      current: await readFile(path.join(root, part.file), 'utf8'),
      generated: '',
    };
    page.generated = withGeneratedPart(page.generated || page.current, part.file, part.name, part.render());
    pages.set(part.file, page);
  }
  return [...pages].map(([file, page]) => ({ file, ...page }));
}
