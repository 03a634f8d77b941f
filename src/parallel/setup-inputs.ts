/**
 * Whether a head changed what the set-up reads, so the set-up's outputs made on an earlier head are not what a
 * set-up on this head would make: the dependency manifests and lockfiles of the toolchains agent-runner knows
 * (at any depth: a workspace's packages have their own), and any file a set-up command names. A set-up that
 * reads other files (a script that reads a list of its own) is not seen: `parallel.checkSandbox: fresh` makes a
 * fresh sandbox, set-up included, for every combined check.
 */
import { git } from '../workspace/git/git-command.js';

/** File names the toolchains' set-ups read (npm, pnpm, yarn, bun, Go, Python, Rust, Ruby, Java, PHP). */
const SETUP_INPUT_NAMES = new Set([
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'pnpm-workspace.yaml',
  'yarn.lock',
  '.yarnrc.yml',
  '.npmrc',
  'bun.lockb',
  'bun.lock',
  'go.mod',
  'go.sum',
  'go.work',
  'go.work.sum',
  'pyproject.toml',
  'setup.py',
  'setup.cfg',
  'Pipfile',
  'Pipfile.lock',
  'poetry.lock',
  'uv.lock',
  'Cargo.toml',
  'Cargo.lock',
  'rust-toolchain',
  'rust-toolchain.toml',
  'Gemfile',
  'Gemfile.lock',
  'pom.xml',
  'build.gradle',
  'build.gradle.kts',
  'composer.json',
  'composer.lock',
  '.agent-runner.yml',
]);

/** True when `file` (a path relative to the repository's root) is read by a set-up. */
export function isSetupInput(file: string, setup: readonly string[]): boolean {
  const name = file.slice(file.lastIndexOf('/') + 1);
  if (SETUP_INPUT_NAMES.has(name) || /^requirements.*\.(txt|in)$/.test(name)) return true;
  // A file a command names as a word (`pip install -r dev-requirements.lock`, `./scripts/bootstrap.sh`).
  return setup.some((command) =>
    command
      .split(/[\s=;&|()<>'"]+/)
      .map((word) => word.replace(/^\.\//, ''))
      .some((word) => word === file || (name.includes('.') && (word === name || word.endsWith(`/${name}`)))),
  );
}

/**
 * Why the set-up's outputs made on `from` do not hold for `to` (the first set-up input that changed), or null.
 * Host git on the person's repository: both are commits of the integration branch.
 */
export async function setupInputsChanged(
  repoRoot: string,
  from: string,
  to: string,
  setup: readonly string[],
): Promise<string | null> {
  const changed = (await git(['diff', '--name-only', '-z', '--no-renames', from, to], { cwd: repoRoot }))
    .split('\0')
    .filter(Boolean);
  const input = changed.find((file) => isSetupInput(file, setup));
  return input === undefined ? null : `the head changed ${input}, which the set-up reads`;
}
