import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { UserError } from '../../src/errors.js';
import {
  detectSystemToolchains,
  goVersionOf,
  pythonFloorOf,
  systemLayerDockerfile,
  systemLayerPlan,
} from '../../src/toolchain/system-toolchains.js';

async function repoWith(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'ar-system-toolchains-'));
  onTestFinished(() => rm(root, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(root, name), text);
  return root;
}

describe('Go, Python and Rust toolchains', () => {
  it('reads the versions the files declare, and only plain values', () => {
    expect(goVersionOf('module x\n\ngo 1.22\n')).toBe('1.22');
    expect(goVersionOf('module x\ngo 1.21.5\ntoolchain go1.22.0\n')).toBe('1.21');
    expect(goVersionOf('module x\ngo 1.22; rm -rf /\n')).toBeUndefined();
    expect(pythonFloorOf('>=3.12')).toBe('3.12');
    expect(pythonFloorOf('>=3.9,<4')).toBe('3.9');
    expect(pythonFloorOf('>3.11')).toBe('3.12');
    expect(pythonFloorOf('~=3.10')).toBe('3.10');
    expect(pythonFloorOf('<4')).toBeUndefined();
  });

  it('detects go.mod, Cargo.toml and a Python project using pytest; nothing in a bare tree', async () => {
    const root = await repoWith({
      'go.mod': 'module example.com/x\n\ngo 1.22\n',
      'Cargo.toml': '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n',
      'pyproject.toml':
        '[project]\nname = "x"\nrequires-python = ">=3.10"\n[project.optional-dependencies]\ntest = ["pytest"]\n',
    });
    expect(await detectSystemToolchains(root)).toEqual({
      go: { version: '1.22', source: 'go.mod' },
      python: { source: 'pyproject.toml', pytest: true, requires: '>=3.10' },
      rust: { source: 'Cargo.toml' },
    });
    expect(await detectSystemToolchains(await repoWith({ 'README.md': '# x\n' }))).toEqual({});
    const plain = await repoWith({ 'requirements.txt': 'requests==2.31\n' });
    expect(await detectSystemToolchains(plain)).toEqual({
      python: { source: 'requirements.txt', pytest: false },
    });
  });

  it("picks Debian's packages: the lowest Go at or above go.mod's, from backports when newer than 1.19", () => {
    const plan = systemLayerPlan({
      go: { version: '1.20', source: 'go.mod' },
      python: { source: 'pyproject.toml', pytest: true },
      rust: { source: 'Cargo.toml' },
    });
    expect(plan.packages).toEqual([
      'golang-1.21-go',
      'python3',
      'python3-venv',
      'python3-pip',
      'python3-pytest',
      'rustc-web',
      'cargo-web',
    ]);
    expect(plan).toMatchObject({ backports: true, goMinor: 21 });
    expect(plan.layers[0]).toBe('Go 1.21 (go.mod: 1.20; Debian bookworm-backports)');
    const dockerfile = systemLayerDockerfile('agent-runner-worker:x', plan);
    expect(dockerfile).toContain('bookworm-backports main');
    expect(dockerfile).toContain('ln -sf /usr/lib/go-1.21/bin/go /usr/local/bin/go');
    expect(dockerfile).toContain('ENV GOTOOLCHAIN=local');
    expect(dockerfile.trimEnd().endsWith('USER 10001:10001')).toBe(true);
    expect(systemLayerPlan({ go: { version: '1.19', source: 'go.mod' } })).toMatchObject({
      packages: ['golang-1.19-go'],
      backports: false,
    });
    expect(systemLayerPlan({})).toEqual({ packages: [], backports: false, layers: [] });
  });

  it('refuses what Debian cannot give, at once, with the fix; sandbox.toolchains.go wins', () => {
    const refusal = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(error).toBeInstanceOf(UserError);
        return error as UserError;
      }
      throw new Error('expected a refusal');
    };
    const go = refusal(() => systemLayerPlan({ go: { version: '1.24', source: 'go.mod' } }));
    expect(go.code).toBe('config_invalid');
    expect(go.message).toMatch(
      /go\.mod asks for Go 1\.24; Debian bookworm offers Go 1\.19 to 1\.23\. Set sandbox\.toolchains\.go/,
    );
    expect(systemLayerPlan({ go: { version: '1.24', source: 'go.mod' } }, { go: '1.23' }).layers[0]).toBe(
      'Go 1.23 (sandbox.toolchains.go: 1.23; Debian bookworm-backports)',
    );
    const python = refusal(() =>
      systemLayerPlan({ python: { source: 'pyproject.toml', pytest: false, requires: '>=3.12' } }),
    );
    expect(python.message).toMatch(
      /requires Python >=3\.12; Debian bookworm's is 3\.11\. Give the sandbox that Python with sandbox\.dockerfile/,
    );
  });
});
