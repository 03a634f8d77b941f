/**
 * Where a named test lives in a repository that is more than one project: a monorepo's packages (npm and yarn
 * `workspaces`, pnpm's `pnpm-workspace.yaml`) or any tree whose test framework is declared below the root (a
 * `go.mod` or `Cargo.toml` in a subdirectory). Everything is read from the task branch's tree as data (file
 * names and blob text from git objects): nothing of the worker's is executed or followed on the host.
 *
 * The rule: a test given with its file runs in the nearest directory at or above that file that declares a
 * framework (its own package.json, go.mod, Cargo.toml or pytest configuration), with the file relative to it;
 * a test given by name only runs at the root when the root declares a framework, else in every workspace
 * package that declares one (a package whose tests do not hold the name reports no test run, which is no
 * evidence either way).
 */
import path from 'node:path/posix';
import picomatch from 'picomatch';
import { parse as parseYaml } from 'yaml';
import { detectTestFramework, type TestFramework } from './test-frameworks.js';

/** The tree as detection sees it: every file's path, and the text of a file when asked (null: not a blob). */
export interface TreeReader {
  files: readonly string[];
  read(file: string): Promise<string | null>;
}

/** A directory (repository-relative, `''` for the root) and the framework it declares. */
export interface TestLocation {
  dir: string;
  framework: TestFramework;
}

/** At most this many workspace packages are run for a test given by name only. */
export const MAX_PACKAGES_PER_TEST = 20;

/** Directory → names of the files directly in it. */
function filesByDirectory(files: readonly string[]): Map<string, string[]> {
  const byDir = new Map<string, string[]>();
  for (const file of files) {
    const dir = path.dirname(file) === '.' ? '' : path.dirname(file);
    const names = byDir.get(dir) ?? [];
    names.push(path.basename(file));
    byDir.set(dir, names);
  }
  return byDir;
}

/** The framework a directory declares, from its own files only. */
async function frameworkIn(
  dir: string,
  byDir: Map<string, string[]>,
  tree: TreeReader,
): Promise<TestFramework | null> {
  const names = byDir.get(dir);
  if (!names) return null;
  const packageJson = names.includes('package.json')
    ? await tree.read(dir ? `${dir}/package.json` : 'package.json')
    : null;
  return detectTestFramework({ packageJson, files: names });
}

/** The workspace patterns the root declares (package.json `workspaces`, `pnpm-workspace.yaml` `packages`). */
async function workspacePatterns(tree: TreeReader): Promise<string[]> {
  const patterns: string[] = [];
  const strings = (value: unknown) =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
  const packageJson = tree.files.includes('package.json') ? await tree.read('package.json') : null;
  if (packageJson) {
    try {
      const workspaces = (JSON.parse(packageJson) as { workspaces?: unknown }).workspaces;
      patterns.push(...strings(workspaces), ...strings((workspaces as { packages?: unknown })?.packages));
    } catch {
      // A package.json that does not parse declares no workspace.
    }
  }
  const pnpm = tree.files.includes('pnpm-workspace.yaml') ? await tree.read('pnpm-workspace.yaml') : null;
  if (pnpm) {
    try {
      patterns.push(...strings((parseYaml(pnpm) as { packages?: unknown } | null)?.packages));
    } catch {
      // Same for a workspace file that does not parse.
    }
  }
  return patterns.map((pattern) => pattern.replace(/^\.\/+/, '').replace(/\/+$/, ''));
}

/** The workspace's package directories that hold a package.json, in path order. */
export async function workspacePackages(tree: TreeReader): Promise<string[]> {
  const patterns = await workspacePatterns(tree);
  const include = patterns.filter((pattern) => !pattern.startsWith('!'));
  if (include.length === 0) return [];
  const exclude = patterns.filter((pattern) => pattern.startsWith('!')).map((pattern) => pattern.slice(1));
  const isIncluded = picomatch(include, { dot: false });
  const isExcluded = exclude.length > 0 ? picomatch(exclude) : () => false;
  return tree.files
    .filter((file) => file.endsWith('/package.json') && !file.split('/').includes('node_modules'))
    .map((file) => path.dirname(file))
    .filter((dir) => isIncluded(dir) && !isExcluded(dir))
    .sort();
}

/**
 * Where the test runs: for a file, the nearest directory at or above it that declares a framework; for a name
 * only, the root, else every workspace package that declares one (at most {@link MAX_PACKAGES_PER_TEST}).
 * Empty when nothing declares a framework.
 */
export async function testLocations(tree: TreeReader, file?: string): Promise<TestLocation[]> {
  const byDir = filesByDirectory(tree.files);
  if (file !== undefined) {
    for (let dir = path.dirname(file) === '.' ? '' : path.dirname(file); ; dir = path.dirname(dir)) {
      if (dir === '.') dir = '';
      const framework = await frameworkIn(dir, byDir, tree);
      if (framework) return [{ dir, framework }];
      if (dir === '') return [];
    }
  }
  const root = await frameworkIn('', byDir, tree);
  if (root) return [{ dir: '', framework: root }];
  const locations: TestLocation[] = [];
  for (const dir of await workspacePackages(tree)) {
    const framework = await frameworkIn(dir, byDir, tree);
    if (framework) locations.push({ dir, framework });
    if (locations.length === MAX_PACKAGES_PER_TEST) break;
  }
  return locations;
}
