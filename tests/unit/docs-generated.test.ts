/**
 * The generated references (docs/configuration.md from the config schema, docs/commands.md from the commander
 * definitions) are what the code generates now, and the generators refuse what they cannot document.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ENVIRONMENT_KEYS } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';
import { commandGaps } from '../../src/docs/command-reference.js';
import { configGroups, UndocumentedKeysError } from '../../src/docs/config-reference.js';
import { generatedPages, withGeneratedPart } from '../../src/docs/generated-docs.js';
import { configFlags, referenceProgram } from '../../src/docs/reference-program.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const noSources = { environment: {}, flags: new Map<string, string[]>() };

/** Dotted paths of every value the defaults hold (an empty map counts as one). */
function leaves(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [prefix];
  const entries = Object.entries(value);
  if (!entries.length) return [prefix];
  return entries.flatMap(([key, inner]) => leaves(inner, prefix ? `${prefix}.${key}` : key));
}

describe('generated references', () => {
  it('every generated page is what the code generates now (else: npm run docs:generate)', async () => {
    const pages = await generatedPages(root);
    expect(pages.map((page) => page.file)).toEqual(['docs/configuration.md', 'docs/commands.md']);
    for (const page of pages)
      expect(
        page.current,
        `${page.file} differs from the code: run \`npm run docs:generate\` and commit it`,
      ).toBe(page.generated);
  });

  it('the configuration reference has a row for every key the defaults hold, with its environment variable and flag', () => {
    const groups = configGroups(configSchema, {
      environment: ENVIRONMENT_KEYS,
      flags: configFlags(referenceProgram()),
    });
    const rows = new Map(groups.flatMap((group) => group.keys).map((key) => [key.key, key]));
    // A group whose keys are all optional (`sandbox.toolchains`, `workers`) is empty by default: its rows are below it.
    const below = (key: string) => [...rows.keys()].some((row) => row.startsWith(`${key}.`));
    for (const key of leaves(configSchema.parse({}))) expect(rows.has(key) || below(key), key).toBe(true);
    for (const [name, key] of Object.entries(ENVIRONMENT_KEYS)) expect(rows.get(key)?.setBy).toContain(name);
    expect(rows.get('limits.wallClock')).toMatchObject({
      type: 'duration',
      default: '`2h`',
      setBy: ['--timeout'],
    });
    expect(rows.get('sandbox.memory')).toMatchObject({ type: 'size', default: '`4g`' });
    expect(rows.get('workers.<type>.api')?.type).toBe('`responses` \\| `chat`');
    expect(rows.get('dod.checks[].command')?.meaning).not.toBe('');
  });

  it('a key without a description stops the generator, naming the key and where to write it', () => {
    const schema = z.strictObject({
      sandbox: z
        .strictObject({
          memory: z.string().default('4g').describe('memory limit'),
          runtime: z.enum(['runc', 'runsc']).default('runc'),
        })
        .describe('The sandbox.'),
      audit: z.strictObject({ keep: z.boolean().default(true).describe('keep it') }),
    });
    expect(() => configGroups(schema, noSources)).toThrow(UndocumentedKeysError);
    expect(() => configGroups(schema, noSources)).toThrow(
      /sandbox\.runtime, audit\. .*\.describe\('\.\.\.'\).*src\/config/,
    );
    expect(() => configGroups(schema, noSources)).not.toThrow(/sandbox\.memory/);
  });

  it('a command without two or three examples or a one-line purpose is named by the generator', () => {
    const program = referenceProgram();
    // Names of no command of the program (`token` and `audit` are real commands now).
    program.command('lease').description('Take and give back leases');
    program.command('history').description('What changed\nand who changed it');
    const gaps = commandGaps(program).join('\n');
    expect(gaps).toContain('`lease` has 0 examples in src/cli/command-examples.ts, not two or three');
    expect(gaps).toContain("`history`'s description is more than one line");
    expect(commandGaps(referenceProgram())).toEqual([]);
    expect(commandGaps(new Command('agent-runner'))).toContain(
      'src/cli/command-examples.ts has examples of `run`, which is no command',
    );
  });

  it('a page without the markers of its generated part is refused with the two lines to add', () => {
    expect(() =>
      withGeneratedPart('# Configuration\n', 'docs/configuration.md', 'configuration keys', 'x'),
    ).toThrow(
      /docs\/configuration\.md has no generated part "configuration keys".*\n<!-- BEGIN GENERATED: configuration keys/,
    );
  });
});
