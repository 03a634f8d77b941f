/**
 * Go, Python and Rust, detected like Node is and installed from Debian's packages (the sandbox's base is
 * Debian bookworm; bookworm-backports carries newer Go) in a layer of the task's image, built once per set of
 * packages and reused. The repository's files are attacker-controlled text: only plain version values are
 * taken, bounded and validated. A declared version Debian cannot give is refused when the image is resolved,
 * before any worker run, with what to do (`sandbox.toolchains.<name>` or a Dockerfile).
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../errors.js';
import { readText } from './detect-toolchain.js';

/** What the repository declares beyond Node, each with the file it came from. */
export interface SystemToolchains {
  /** `go 1.22` of go.mod (`1.22`). */
  go?: { version: string; source: string };
  python?: { source: string; pytest: boolean; requires?: string };
  rust?: { source: string };
}

/** Versions from `sandbox.toolchains` that win over the repository's. */
export interface ToolchainOverrides {
  go?: string;
}

/** Go minor versions Debian bookworm offers (main: 1.19; backports: the others). */
const DEBIAN_GO = [19, 21, 22, 23] as const;
/** bookworm's Python 3 (major.minor). */
export const DEBIAN_PYTHON = '3.11';

/** `go 1.22` / `go 1.21.5` in go.mod → `1.22` / `1.21`. */
export function goVersionOf(goMod: string): string | undefined {
  const match = /^go\s+(1\.\d{1,3})(?:\.\d{1,3})?\s*$/m.exec(goMod);
  return match?.[1];
}

/** A lower bound `>=3.12` / `>3.11` / `~=3.12` / `==3.12.*` of `requires-python`, as major.minor; else undefined. */
export function pythonFloorOf(requires: string): string | undefined {
  const match = /(?:>=|~=|==)\s*(3\.\d{1,2})/.exec(requires);
  if (match?.[1]) return match[1];
  const above = /(?:^|,)\s*>\s*3\.(\d{1,2})\s*(?:,|$)/.exec(requires);
  return above?.[1] ? `3.${Number(above[1]) + 1}` : undefined;
}

function minorOf(version: string): number {
  return Number(version.split('.')[1] ?? NaN);
}

async function detectPython(root: string, names: ReadonlySet<string>): Promise<SystemToolchains['python']> {
  const requirements = [...names].filter((name) => /^requirements.*\.txt$/.test(name)).sort();
  const clues = ['pyproject.toml', 'setup.cfg', 'setup.py', ...requirements].filter((name) =>
    names.has(name),
  );
  if (clues.length === 0) return undefined;
  const texts = await Promise.all(clues.map((name) => readText(path.join(root, name))));
  const all = texts.join('\n');
  const pytest =
    ['pytest.ini', 'conftest.py', 'tox.ini'].some((name) => names.has(name)) ||
    /\bpytest\b/.test(all) ||
    (names.has('tests') && /\[tool\.pytest/.test(all));
  const requires = /^\s*requires-python\s*=\s*["']([^"'\n]{1,60})["']/m.exec(all)?.[1]?.trim();
  return { source: clues[0]!, pytest, ...(requires ? { requires } : {}) };
}

/** Reads what the repository at `root` declares beyond Node (top-level files only). */
export async function detectSystemToolchains(root: string): Promise<SystemToolchains> {
  let entries: string[] = [];
  try {
    entries = await readdir(root);
  } catch {
    return {};
  }
  const names = new Set(entries);
  const declared: SystemToolchains = {};
  if (names.has('go.mod')) {
    const version = goVersionOf((await readText(path.join(root, 'go.mod'))) ?? '');
    declared.go = { version: version ?? `1.${DEBIAN_GO[0]}`, source: 'go.mod' };
  }
  const python = await detectPython(root, names);
  if (python) declared.python = python;
  if (names.has('Cargo.toml')) declared.rust = { source: 'Cargo.toml' };
  return declared;
}

/** The Debian packages for a declaration, what each layer is in words, and the Go to link as `go`. */
export interface SystemLayerPlan {
  packages: string[];
  backports: boolean;
  goMinor?: number;
  layers: string[];
}

function goPlan(go: NonNullable<SystemToolchains['go']>, override: string | undefined) {
  const wanted = override ?? go.version;
  const source = override ? 'sandbox.toolchains.go' : go.source;
  const minor = minorOf(wanted);
  const picked = DEBIAN_GO.find((offered) => offered >= minor);
  if (!/^1\.\d+$/.test(wanted) || picked === undefined)
    throw new UserError(
      'config_invalid',
      `${source} asks for Go ${wanted}; Debian bookworm offers Go 1.${DEBIAN_GO[0]} to 1.${DEBIAN_GO.at(-1)}. ` +
        `Set sandbox.toolchains.go (e.g. "1.${DEBIAN_GO.at(-1)}") in agent-runner.yaml if the code builds with it, ` +
        'or give the sandbox your own Go with sandbox.dockerfile.',
    );
  return {
    packages: [`golang-1.${picked}-go`],
    backports: picked !== DEBIAN_GO[0],
    goMinor: picked,
    layer: `Go 1.${picked} (${source}: ${wanted}; Debian${picked !== DEBIAN_GO[0] ? ' bookworm-backports' : ''})`,
  };
}

/** What to install for `declared`; throws `config_invalid` (exit 2) with the fix when Debian cannot give it. */
export function systemLayerPlan(
  declared: SystemToolchains,
  overrides: ToolchainOverrides = {},
): SystemLayerPlan {
  const plan: SystemLayerPlan = { packages: [], backports: false, layers: [] };
  if (declared.go) {
    const go = goPlan(declared.go, overrides.go);
    plan.packages.push(...go.packages);
    plan.backports = go.backports;
    plan.goMinor = go.goMinor;
    plan.layers.push(go.layer);
  }
  if (declared.python) {
    const floor = declared.python.requires ? pythonFloorOf(declared.python.requires) : undefined;
    if (floor !== undefined && minorOf(floor) > minorOf(DEBIAN_PYTHON))
      throw new UserError(
        'config_invalid',
        `${declared.python.source} requires Python ${declared.python.requires}; Debian bookworm's is ${DEBIAN_PYTHON}. ` +
          'Give the sandbox that Python with sandbox.dockerfile (e.g. FROM python:3.12-bookworm), or lower requires-python if the code runs on 3.11.',
      );
    plan.packages.push('python3', 'python3-venv', 'python3-pip');
    if (declared.python.pytest) plan.packages.push('python3-pytest');
    plan.layers.push(
      `Python ${DEBIAN_PYTHON} with venv and pip${declared.python.pytest ? ' and pytest' : ''} (${declared.python.source}; Debian)`,
    );
  }
  if (declared.rust) {
    // rustc-web / cargo-web: bookworm's current Rust (1.85), kept up to date for its browsers.
    plan.packages.push('rustc-web', 'cargo-web');
    plan.layers.push(`Rust with cargo (${declared.rust.source}; Debian rustc-web)`);
  }
  return plan;
}

/** The layer's Dockerfile: Debian packages on top of `from`; `go` linked where every shell finds it. */
export function systemLayerDockerfile(from: string, plan: SystemLayerPlan): string {
  const sources = plan.backports
    ? '    echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/agent-runner-backports.list; \\'
    : undefined;
  const lines = [
    '# agent-runner: the toolchains the repository declares (Debian packages), on top of the worker image.',
    `FROM ${from}`,
    'USER root',
    'RUN set -eux; \\',
    ...(sources ? [sources] : []),
    '    apt-get update -qq; \\',
    `    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${plan.packages.join(' ')}; \\`,
    ...(plan.goMinor !== undefined
      ? [
          `    ln -sf /usr/lib/go-1.${plan.goMinor}/bin/go /usr/local/bin/go; \\`,
          `    ln -sf /usr/lib/go-1.${plan.goMinor}/bin/gofmt /usr/local/bin/gofmt; \\`,
        ]
      : []),
    '    rm -rf /var/lib/apt/lists/*',
  ];
  // Go must not try to download another toolchain (the sandbox has no network for it), and must not ask git
  // about the workspace (its .git belongs to another uid in the sandbox: "error obtaining VCS status").
  if (plan.goMinor !== undefined) lines.push('ENV GOTOOLCHAIN=local GOFLAGS=-buildvcs=false');
  lines.push('USER 10001:10001', '');
  return lines.join('\n');
}
