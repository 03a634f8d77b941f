/**
 * The CLI the tests start as a process of its own: `src/cli/main.ts` bundled by esbuild, as `npm run build`
 * bundles the package's CLI, but straight from the sources, so a test never runs a stale `dist/`.
 *
 * Why not `node --import tsx src/cli/main.ts`: tsx compiles and resolves several hundred modules through its
 * loader at every start, about 1.6 s of CPU more per process than the bundle (measured on this machine: a
 * four-process test file used 59 s of CPU with tsx, 50 s with the bundle), and the suite starts well over a
 * hundred of them on two cores.
 *
 * One bundle per state of the sources: the directory's name carries a digest of every file's path, size and
 * mtime under src/ (and of package.json), so an edit makes a new one. Test processes running side by side
 * build it at most once each and publish it with an atomic rename; the loser of a race keeps the winner's.
 * The directory sits at the repository's root, one level down as dist/ does, because the CLI finds its
 * package (templates, patterns, protocols, migrations) at `..` of its own file.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';
import { CLI_BUNDLE_OPTIONS } from '../../scripts/cli-bundle-options.mjs';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const PREFIX = '.test-cli-';

let built: string | undefined;

/** The bundled CLI's entry file (built on first use): run it as `node <entry> ...args`. */
export function cliEntry(): string {
  built ??= buildOnce();
  return built;
}

/** `[entry, ...args]`: the argv after `node` for one CLI run. */
export function cliArgs(args: string[]): string[] {
  return [cliEntry(), ...args];
}

function sourcesDigest(): string {
  const hash = createHash('sha256');
  const walk = (directory: string): void => {
    for (const entry of readdirSync(directory, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const full = path.join(directory, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const stat = statSync(full);
        hash.update(`${path.relative(ROOT, full)}\0${stat.size}\0${stat.mtimeMs}\n`);
      }
    }
  };
  walk(path.join(ROOT, 'src'));
  const manifest = statSync(path.join(ROOT, 'package.json'));
  hash.update(`package.json\0${manifest.size}\0${manifest.mtimeMs}\n`);
  return hash.digest('hex').slice(0, 16);
}

function buildOnce(): string {
  const name = `${PREFIX}${sourcesDigest()}`;
  const directory = path.join(ROOT, name);
  const entry = path.join(directory, 'main.js');
  if (existsSync(entry)) return entry;
  const scratch = path.join(ROOT, `${PREFIX}tmp-${process.pid}-${Date.now()}`);
  buildSync({
    ...CLI_BUNDLE_OPTIONS,
    // `main`: the CLI runs itself only when started as a file named main.js (src/cli/main.ts says why).
    entryPoints: { main: path.join(ROOT, 'src', 'cli', 'main.ts') },
    outdir: scratch,
    chunkNames: 'chunk-[hash]',
  });
  try {
    renameSync(scratch, directory);
  } catch (error) {
    // Another test process published the same sources first.
    rmSync(scratch, { recursive: true, force: true });
    if (!existsSync(entry)) throw error;
    return entry;
  }
  // Older bundles (earlier states of the sources, a build cut short) go, unless a process may still use them.
  for (const other of readdirSync(ROOT))
    if (other.startsWith(PREFIX) && other !== name) {
      const full = path.join(ROOT, other);
      if (Date.now() - statSync(full).mtimeMs > 10 * 60_000) rmSync(full, { recursive: true, force: true });
    }
  return entry;
}
