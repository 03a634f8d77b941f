/**
 * Compiles a bench entry point (and what it imports) to plain JavaScript in a temporary directory, laid out
 * like the package (package.json, templates/, patterns/, protocols/ and node_modules linked next to it), so
 * a child process can run it with plain `node`. Memory is measured there: agent-runner ships compiled JS,
 * and the tsx loader (its own loader thread and compiler) would add tens of MiB that are not agent-runner's.
 */
import { access, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';

const REPO_ROOT = path.resolve(import.meta.dirname, '..');
const LINKED = ['package.json', 'templates', 'patterns', 'protocols', 'node_modules'];

export interface CompiledBench {
  /** The compiled entry point. */
  entry: string;
  remove(): Promise<void>;
}

/** `entry` is relative to the repository root, e.g. `bench/parallel-child.ts`. */
export async function compileBenchEntry(entry: string): Promise<CompiledBench> {
  const root = await mkdtemp(path.join(tmpdir(), 'agent-runner-bench-build-'));
  const outDir = path.join(root, 'package');
  await mkdir(outDir);
  for (const name of LINKED) await symlink(path.join(REPO_ROOT, name), path.join(outDir, name));
  const tsconfig = path.join(root, 'tsconfig.json');
  await writeFile(
    tsconfig,
    JSON.stringify({
      extends: path.join(REPO_ROOT, 'tsconfig.json'),
      compilerOptions: { rootDir: REPO_ROOT, outDir, sourceMap: false, noEmit: false, incremental: false },
      files: [path.join(REPO_ROOT, entry)],
      include: [],
    }),
  );
  // Type errors elsewhere in the tree (work in progress) do not stop the emit; a missing output does.
  const result = await execa(path.join(REPO_ROOT, 'node_modules/.bin/tsc'), ['-p', tsconfig], {
    reject: false,
  });
  const compiled = path.join(outDir, entry.replace(/\.ts$/, '.js'));
  try {
    await access(compiled);
  } catch {
    await rm(root, { recursive: true, force: true });
    throw new Error(`tsc did not emit ${compiled}: ${result.stdout}${result.stderr}`.slice(0, 2000));
  }
  return { entry: compiled, remove: () => rm(root, { recursive: true, force: true }) };
}
