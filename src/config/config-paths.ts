/**
 * The configuration's file paths, checked when it is loaded: `sandbox.dockerfile`, `sandbox.extraCaCert` and
 * `notes.template` name files relative to the repository root. A path that names nothing was found only when
 * the image was built or the note written (after the task branch existed, with a worker run spent); now every
 * command that loads the configuration (`run`, `resume`, `plan`, `image`, `doctor`) refuses it first.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../errors.js';
import type { Config } from './schema.js';

interface ConfigPath {
  key: string;
  value: string | undefined;
  /** The file must be inside the repository (it is part of the image's build context). */
  inside: boolean;
}

async function problemOf(repoRoot: string, entry: ConfigPath): Promise<string | null> {
  if (entry.value === undefined) return null;
  const file = path.resolve(repoRoot, entry.value);
  const relative = path.relative(repoRoot, file);
  if (entry.inside && (relative.startsWith('..') || path.isAbsolute(relative)))
    return `${entry.key}: ${entry.value} is outside the repository; give a path inside it, relative to its root.`;
  try {
    const info = await stat(file);
    if (info.isFile()) return null;
    return `${entry.key}: ${file} is not a file; name the file itself, relative to the repository root.`;
  } catch {
    return `${entry.key}: ${file} does not exist; fix the path (relative to the repository root ${repoRoot}) or remove the key.`;
  }
}

/** Throws `config_invalid` (exit 2) naming every configured path that is not a readable file where it must be. */
export async function checkConfigPaths(config: Config, repoRoot: string): Promise<void> {
  const entries: ConfigPath[] = [
    { key: 'sandbox.dockerfile', value: config.sandbox.dockerfile, inside: true },
    { key: 'sandbox.extraCaCert', value: config.sandbox.extraCaCert, inside: false },
    { key: 'notes.template', value: config.notes.template, inside: false },
  ];
  const problems = (await Promise.all(entries.map((entry) => problemOf(repoRoot, entry)))).filter(
    (problem): problem is string => problem !== null,
  );
  if (problems.length > 0) throw new UserError('config_invalid', problems.join('\n'));
}
