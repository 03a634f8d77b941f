/**
 * Temporary git repositories for tests: real git, removed when the test ends.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';

export interface TempRepo {
  root: string;
  /** Runs git in the repository (throws on a non-zero exit) and returns stdout. */
  git(...args: string[]): string;
  write(relativePath: string, content: string): Promise<void>;
  /** Writes the files, stages everything and commits; returns the new commit id. */
  commit(message: string, files?: Record<string, string>): Promise<string>;
}

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Test Person',
  GIT_AUTHOR_EMAIL: 'person@example.test',
  GIT_COMMITTER_NAME: 'Test Person',
  GIT_COMMITTER_EMAIL: 'person@example.test',
};

function gitEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('GIT_')) env[key] = value;
  return { ...env, ...IDENTITY, GIT_CONFIG_NOSYSTEM: '1' };
}

/** Runs git in `cwd` with a fixed identity and no inherited GIT_* variables. */
export function runGit(cwd: string, args: string[], options: { input?: string | Buffer } = {}): string {
  return execFileSync('git', args, {
    cwd,
    env: gitEnvironment(),
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.input !== undefined ? { input: options.input } : {}),
    maxBuffer: 64 * 1024 ** 2,
  });
}

/**
 * A new repository on branch `main` with `files` committed (when given). Removed at the end of the test
 * (or at `cleanup` in afterAll when `keep` is set by the caller through its own hook).
 */
export async function createTempRepo(
  files: Record<string, string> = {},
  options: { prefix?: string; autoCleanup?: boolean } = {},
): Promise<TempRepo & { cleanup(): Promise<void> }> {
  const root = await mkdtemp(path.join(tmpdir(), options.prefix ?? 'ar-repo-'));
  const cleanup = () => rm(root, { recursive: true, force: true });
  if (options.autoCleanup !== false) onTestFinished(cleanup);
  runGit(root, ['init', '-q', '--initial-branch=main']);
  const repo = {
    root,
    cleanup,
    git: (...args: string[]) => runGit(root, args),
    async write(relativePath: string, content: string) {
      const target = path.join(root, relativePath);
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, content);
    },
    async commit(message: string, more: Record<string, string> = {}) {
      for (const [file, content] of Object.entries(more)) await repo.write(file, content);
      runGit(root, ['add', '-A']);
      runGit(root, ['commit', '-q', '--allow-empty', '-m', message]);
      return runGit(root, ['rev-parse', 'HEAD']).trim();
    },
  };
  if (Object.keys(files).length > 0) await repo.commit('initial', files);
  return repo;
}
