import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkGitRepository, findGitRoot } from '../../src/doctor/git-check.js';

async function tempDir(): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), 'agent-runner-doctor-git-'));
  onTestFinished(() => rm(directory, { recursive: true, force: true }));
  return directory;
}

describe('checkGitRepository', () => {
  it('fails outside a repository', async () => {
    const directory = await tempDir();
    const check = await checkGitRepository(directory);
    expect(check.ok).toBe(false);
    expect(check.detail).toBe(`${directory} is not inside a git repository`);
    expect(check.fix).toContain('git init');
    expect(await findGitRoot(directory)).toBeUndefined();
  });

  it('fails in a repository without a commit', async () => {
    const repo = await tempDir();
    await execa('git', ['init', '-q'], { cwd: repo });
    const check = await checkGitRepository(repo);
    expect(check.ok).toBe(false);
    expect(check.detail).toBe(`${repo} has no commit yet`);
    expect(check.fix).toContain('first commit');
  });

  it('passes from a subdirectory of a repository with a commit and names the branch', async () => {
    const repo = await tempDir();
    await execa('git', ['init', '-q', '-b', 'trunk'], { cwd: repo });
    await writeFile(path.join(repo, 'a.txt'), 'a\n');
    await execa('git', ['add', '-A'], { cwd: repo });
    await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-qm', 'a'], {
      cwd: repo,
    });
    await mkdir(path.join(repo, 'sub'));
    const check = await checkGitRepository(path.join(repo, 'sub'));
    expect(check.ok).toBe(true);
    expect(check.detail).toMatch(new RegExp(`^${repo} \\(branch trunk at [0-9a-f]{12}\\)$`));
    expect(await findGitRoot(path.join(repo, 'sub'))).toBe(repo);
  });
});
