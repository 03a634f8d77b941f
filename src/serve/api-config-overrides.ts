/**
 * What an API client may override of the configuration. The client holds the server's token but is not the
 * machine's owner, so two kinds of keys are checked before the overrides become a config layer:
 *
 * - keys that name files or directories (`sandbox.dockerfile`, `sandbox.extraCaCert`, `notes.template`,
 *   `patterns.dirs`) must name ones of the repository ({@link resolveInRepository}); they are replaced by the
 *   real path that was checked;
 * - keys only the owner sets (in agent-runner.yaml or the environment) are refused: where the owner's model keys
 *   are sent and which of the server's environment variables is sent as a key (`*.baseUrl`, `*.apiKeyEnv`: with
 *   both, a client would receive any variable of the server), what the sandbox reaches (`sandbox.network`,
 *   `sandbox.setupNetwork`, `sandbox.allowlist`), what of the repository it sees (`scope.exclude`, `scope.read`:
 *   a client that empties `scope.exclude` gets `.env` into the sandbox and back in the note), and which image
 *   the owner's engine pulls and runs (`sandbox.image`, `sandbox.baseImage`).
 *
 * Everything else (limits, the DoD, the worker's type and model, parallel work...) only shapes the task.
 */
import { RequestFieldError, resolveInRepository } from './repository-path.js';

type Plain = Record<string, unknown>;

/** Keys only the machine's owner sets; `*` stands for any one key (a worker type). */
export const OWNER_ONLY_KEYS: readonly string[] = [
  'meta.baseUrl',
  'meta.apiKeyEnv',
  'worker.baseUrl',
  'worker.apiKeyEnv',
  'workers.*.baseUrl',
  'workers.*.apiKeyEnv',
  'sandbox.network',
  'sandbox.setupNetwork',
  'sandbox.allowlist',
  'sandbox.image',
  'sandbox.baseImage',
  'scope.exclude',
  'scope.read',
  // Where delivery sends the branch and the forge token.
  'deliver.remote',
  'deliver.forge',
  'deliver.apiUrl',
];

/** Keys that name a file (or, for `patterns.dirs`, each item a directory) relative to the repository root. */
export const PATH_KEYS: readonly { key: string; kind: 'file' | 'directory'; list?: boolean }[] = [
  { key: 'sandbox.dockerfile', kind: 'file' },
  { key: 'sandbox.extraCaCert', kind: 'file' },
  { key: 'notes.template', kind: 'file' },
  { key: 'patterns.dirs', kind: 'directory', list: true },
];

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every leaf of the overrides as [dotted path, value] (arrays are leaves). */
function leaves(value: Plain, prefix: string[] = []): [string[], unknown][] {
  return Object.entries(value).flatMap(([key, inner]) =>
    isPlain(inner) ? leaves(inner, [...prefix, key]) : [[[...prefix, key], inner] as [string[], unknown]],
  );
}

/** Whether `given` and `pattern` (with `*`) overlap: one is the other, or a prefix of it. */
function overlaps(given: readonly string[], pattern: readonly string[]): boolean {
  const common = Math.min(given.length, pattern.length);
  for (let index = 0; index < common; index += 1)
    if (pattern[index] !== '*' && pattern[index] !== given[index]) return false;
  return true;
}

/**
 * The overrides an API client sent, checked: owner-only keys refused, path keys resolved inside the repository
 * (and replaced by their real path). Throws {@link RequestFieldError} naming `config.<key>`.
 */
export async function checkApiOverrides(
  repoRoot: string,
  overrides: Plain,
  options: { refused?: (relativePath: string) => boolean } = {},
): Promise<Plain> {
  const checked: Plain = structuredClone(overrides);
  for (const [keys] of leaves(checked)) {
    const owner = OWNER_ONLY_KEYS.find((key) => overlaps(keys, key.split('.')));
    if (owner !== undefined)
      throw new RequestFieldError(
        `config.${keys.join('.')}`,
        `${owner} is set by the machine's owner (agent-runner.yaml or the environment), not over the API.`,
      );
  }
  for (const { key, kind, list } of PATH_KEYS) {
    const [section, name] = key.split('.') as [string, string];
    const block = checked[section];
    if (!isPlain(block) || block[name] === undefined) continue;
    const field = `config.${key}`;
    const value = block[name];
    const resolve = (given: unknown, itemField: string) => {
      if (typeof given !== 'string' || given === '')
        throw new RequestFieldError(itemField, 'expected a path relative to the repository root.');
      return resolveInRepository(repoRoot, given, {
        field: itemField,
        kind,
        ...(options.refused ? { refused: options.refused } : {}),
      });
    };
    if (list) {
      if (!Array.isArray(value)) throw new RequestFieldError(field, 'expected a list of paths.');
      block[name] = await Promise.all(value.map((item, index) => resolve(item, `${field}.${index}`)));
    } else block[name] = await resolve(value, field);
  }
  return checked;
}
