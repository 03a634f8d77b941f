import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadPatternLibrary } from '../../src/patterns/pattern-library.js';
import { renderWorkerPrompt } from '../../src/patterns/worker-prompt.js';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ar-patterns-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('pattern library', () => {
  it('loads the built-in patterns', async () => {
    const library = await loadPatternLibrary();
    expect(library.names).toEqual(
      expect.arrayContaining([
        'implement_feature',
        'run_all_checks',
        'ensure_git_clean',
        'summarize_work_as_json',
        'commit_work',
        'fix_failing_checks',
      ]),
    );
  });

  it('adds and overrides patterns from user directories', async () => {
    const dir = await tempDir();
    await writeFile(
      path.join(dir, 'a.yaml'),
      'name: write_docs\ndescription: Docs.\ninstructions: Write docs.\n',
    );
    await writeFile(
      path.join(dir, 'b.yaml'),
      'name: commit_work\ndescription: Mine.\ninstructions: Sign commits.\n',
    );
    const library = await loadPatternLibrary([dir]);
    expect(library.has('write_docs')).toBe(true);
    expect(library.resolve(['commit_work'])[0]?.instructions).toBe('Sign commits.');
  });

  it('refuses an invalid pattern file with its path', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'bad.yaml'), 'name: Bad Name\ndescription: x\n');
    await expect(loadPatternLibrary([dir])).rejects.toThrow(
      /bad\.yaml: name: expected snake_case; instructions: Required/,
    );
  });

  it('expands patterns into the worker prompt', async () => {
    const library = await loadPatternLibrary();
    const prompt = renderWorkerPrompt({
      taskId: 'T-1',
      title: 'Add slugify',
      branch: 'agent-runner/T-1',
      acceptanceCriteria: [{ id: 'AC1', description: 'slugify("A B") returns "a-b"', critical: true }],
      scope: 'You may write: src/**',
      patterns: library.resolve(['implement_feature', 'commit_work']),
      instruction: 'Implement slugify in src/slug.js with a test.',
    });
    expect(prompt).toContain('# Task T-1: Add slugify');
    expect(prompt).toContain('- **AC1** (critical): slugify("A B") returns "a-b"');
    expect(prompt).toContain('### implement_feature');
    expect(prompt).toContain('### commit_work');
    expect(prompt).toContain('You may write: src/**');
    expect(prompt.trim().endsWith('Implement slugify in src/slug.js with a test.')).toBe(true);
  });
});
