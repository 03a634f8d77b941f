/**
 * The Command Pattern Library: named, reusable worker instructions kept as YAML in `patterns/` (and in
 * user directories from `patterns.dirs`). The Meta-agent picks patterns by name (`used_patterns`); the core
 * expands them into the worker prompt.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';
import * as z from 'zod';
import { formatIssues } from '../config/load.js';
import { UserError } from '../errors.js';
import { PACKAGE_ROOT } from '../version.js';

export const patternSchema = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9_]*$/, 'expected snake_case'),
  description: z.string().min(1),
  instructions: z.string().min(1),
});
export type Pattern = z.infer<typeof patternSchema>;

/** Patterns by name. */
export class PatternLibrary {
  private readonly byName: Map<string, Pattern>;

  constructor(patterns: readonly Pattern[]) {
    this.byName = new Map(patterns.map((pattern) => [pattern.name, pattern]));
  }

  get names(): string[] {
    return [...this.byName.keys()].sort();
  }

  list(): Pattern[] {
    return this.names.map((name) => this.byName.get(name) as Pattern);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The patterns for `names`, in order; unknown names are the caller's protocol error, so they throw here. */
  resolve(names: readonly string[]): Pattern[] {
    return names.map((name) => {
      const pattern = this.byName.get(name);
      if (!pattern) throw new Error(`unknown pattern ${name}`);
      return pattern;
    });
  }
}

export const BUILTIN_PATTERNS_DIR = path.join(PACKAGE_ROOT, 'patterns');

/**
 * Loads the built-in patterns, then each user directory in order; a later pattern of the same name replaces
 * an earlier one, so a project can refine a built-in.
 */
export async function loadPatternLibrary(userDirs: readonly string[] = []): Promise<PatternLibrary> {
  const patterns = new Map<string, Pattern>();
  for (const dir of [BUILTIN_PATTERNS_DIR, ...userDirs]) {
    let entries: string[];
    try {
      entries = (await readdir(dir)).filter((name) => /\.ya?ml$/.test(name)).sort();
    } catch (error) {
      throw new UserError(
        'config_invalid',
        `patterns.dirs: cannot read ${dir}: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    for (const entry of entries) {
      const file = path.join(dir, entry);
      let raw: unknown;
      try {
        raw = parse(await readFile(file, 'utf8'), { uniqueKeys: true });
      } catch (error) {
        throw new UserError(
          'config_invalid',
          `${file}: invalid YAML: ${(error as Error).message.split('\n')[0]}`,
        );
      }
      const result = patternSchema.safeParse(raw);
      if (!result.success) {
        throw new UserError('config_invalid', `${file}: ${formatIssues(result.error.issues).join('; ')}`);
      }
      patterns.set(result.data.name, result.data);
    }
  }
  return new PatternLibrary([...patterns.values()]);
}
