/**
 * The package registries a repository uses, from the manifests and lock files at its root: the default
 * allowlist of the setup phase (`npm ci`, `pip install`, ...) when `sandbox.setupNetwork` is not set.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';

/** Registry hosts per file that reveals the ecosystem. */
const REGISTRIES: Record<string, readonly string[]> = {
  'package.json': ['registry.npmjs.org'],
  'yarn.lock': ['registry.yarnpkg.com', 'registry.npmjs.org'],
  'pnpm-lock.yaml': ['registry.npmjs.org'],
  'requirements.txt': ['pypi.org', 'files.pythonhosted.org'],
  'pyproject.toml': ['pypi.org', 'files.pythonhosted.org'],
  'setup.py': ['pypi.org', 'files.pythonhosted.org'],
  Pipfile: ['pypi.org', 'files.pythonhosted.org'],
  'Cargo.toml': ['crates.io', 'index.crates.io', 'static.crates.io'],
  'go.mod': ['proxy.golang.org', 'sum.golang.org'],
  Gemfile: ['rubygems.org', 'index.rubygems.org'],
  'composer.json': ['repo.packagist.org'],
};

/** Hosts named by `registry=` / `@scope:registry=` lines of an .npmrc. */
function npmrcHosts(text: string): string[] {
  const hosts: string[] = [];
  for (const match of text.matchAll(/^\s*(?:@[\w.-]+:)?registry\s*=\s*(\S+)/gm)) {
    try {
      if (match[1]) hosts.push(new URL(match[1]).hostname);
    } catch {
      // not a URL: nothing to allow
    }
  }
  return hosts;
}

/** Registry hosts for the repository at `root` (sorted, unique); empty when none is recognised. */
export async function detectPackageRegistries(root: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return [];
  }
  const hosts = new Set<string>();
  for (const name of names) {
    // requirements-dev.txt and the like: what the detected set-up installs (src/workspace/checks/detect-setup.ts).
    const key = /^requirements[\w.-]*\.txt$/.test(name) ? 'requirements.txt' : name;
    for (const host of REGISTRIES[key] ?? []) hosts.add(host);
  }
  if (names.includes('.npmrc')) {
    const text = await readFile(path.join(root, '.npmrc'), 'utf8').catch(() => '');
    for (const host of npmrcHosts(text)) hosts.add(host);
  }
  return [...hosts].sort();
}
