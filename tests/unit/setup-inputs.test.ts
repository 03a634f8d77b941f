import { describe, expect, it } from 'vitest';
import { isSetupInput, setupInputsChanged } from '../../src/parallel/setup-inputs.js';
import { createTempRepo } from '../support/git-repo.js';

describe('what the set-up reads', () => {
  it.each([
    ['package.json', []],
    ['packages/web/package.json', []],
    ['pnpm-lock.yaml', []],
    ['go.sum', []],
    ['requirements-dev.txt', []],
    ['services/api/pyproject.toml', []],
    ['Cargo.lock', []],
    ['deps/dev.lock', ['pip install -r deps/dev.lock']],
    ['scripts/bootstrap.sh', ['./scripts/bootstrap.sh']],
  ])('%s is a set-up input (set-up %j)', (file, setup) => {
    expect(isSetupInput(file, setup)).toBe(true);
  });

  it.each(['src/index.js', 'README.md', 'packages/web/src/package.ts', 'docs/go.mod.md', 'c'])(
    '%s is not',
    (file) => {
      expect(isSetupInput(file, ['npm ci', 'pip install -r requirements.txt'])).toBe(false);
    },
  );

  it('names the first input a head changed, and nothing when none changed', async () => {
    const repo = await createTempRepo({ 'package.json': '{}\n', 'src/a.js': '1\n' });
    const base = repo.git('rev-parse', 'HEAD').trim();
    const code = await repo.commit('code', { 'src/a.js': '2\n' });
    expect(await setupInputsChanged(repo.root, base, code, ['npm ci'])).toBeNull();
    const manifest = await repo.commit('manifest', { 'package.json': '{"name":"x"}\n' });
    expect(await setupInputsChanged(repo.root, code, manifest, ['npm ci'])).toBe(
      'the head changed package.json, which the set-up reads',
    );
  });
});
