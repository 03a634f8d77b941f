/**
 * The set-up a Python project gets when `sandbox.setup` is not set. Read (the project's files, the image's
 * Python) → decide (pure) → the commands or one error with the fix.
 *
 * A virtual environment with the project and its requirements in it, when the image's python3 can make one:
 * it also installs the project itself (a src layout imports only so). When it cannot (a Debian image without
 * `python3-venv`, e.g. the README's Dockerfile with `python3-pytest` only), nothing is made where the image's
 * Python already has everything the project declares (the checks run with it, as they did before set-up was
 * detected); where something is missing, the task stops before any worker run saying to install
 * `python3-venv` or to set `sandbox.setup`.
 */
import { parse as parseToml } from 'smol-toml';
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import type { DetectedCommand } from '../../core/detected-command.js';
import { EnvironmentError } from '../../errors.js';
import { normalizePythonName, type ImagePython } from '../../toolchain/image-python.js';
import {
  judgeRequirements,
  parseRequirement,
  readRequirementsFile,
  type DeclaredRequirements,
} from './python-requirements.js';

/**
 * The virtual environment's directory in the repository. The checks' clean shell puts its `bin` first on
 * PATH when it exists (dod-checks.ts), so a detected `python3 -m pytest` runs the venv's Python.
 */
export const PYTHON_VENV_DIR = '.venv';

/** A Python project's facts from its files. */
export interface PythonProject {
  /** `requirements*.txt` at the root, sorted. */
  requirementsFiles: string[];
  /** `pyproject.toml` (when it declares a package) and `setup.py`: what `pip install -e .` installs. */
  projectFiles: string[];
  /** The build backend is setuptools (or none is named): an editable install needs no package index. */
  setuptools: boolean;
  /** The detected DoD runs pytest (and from which file). */
  pytestFrom?: string;
  declared: DeclaredRequirements;
}

/** What the set-up of a Python project is. */
export type PythonSetupDecision =
  | { kind: 'venv'; commands: DetectedCommand[] }
  /** No environment: the image's Python has what the project declares. `met`/`unchecked` say what was seen. */
  | { kind: 'system'; met: string[]; unchecked: string[] }
  | { kind: 'refuse'; unmet: string[] };

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

function tomlOf(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch {
    return null;
  }
}

function table(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** `[project] dependencies` (and what cannot be read from it: dynamic ones, poetry's table). */
function pyprojectDeclared(pyproject: Record<string, unknown>, into: DeclaredRequirements): void {
  const project = table(pyproject.project);
  const dependencies = project?.dependencies;
  if (Array.isArray(dependencies))
    for (const line of dependencies) {
      const requirement = typeof line === 'string' ? parseRequirement(line, 'pyproject.toml') : null;
      if (requirement) into.requirements.push(requirement);
      else into.unchecked.push(`pyproject.toml: ${String(line)}`);
    }
  if (Array.isArray(project?.dynamic) && project.dynamic.includes('dependencies'))
    into.unchecked.push("pyproject.toml's dynamic dependencies");
  const poetry = table(table(table(pyproject.tool)?.poetry)?.dependencies);
  const named = Object.keys(poetry ?? {}).filter((name) => name !== 'python');
  if (named.length > 0)
    into.unchecked.push(`pyproject.toml's [tool.poetry.dependencies]: ${named.join(', ')}`);
}

/** Reads the Python project at `directory` (`names`: its top-level entries); null when there is none. */
export async function readPythonProject(
  directory: string,
  names: readonly string[],
  pytestOf: () => Promise<string | undefined>,
): Promise<PythonProject | null> {
  const requirementsFiles = names.filter((name) => /^requirements[\w.-]*\.txt$/.test(name)).sort();
  const pyprojectText = names.includes('pyproject.toml')
    ? await readText(path.join(directory, 'pyproject.toml'))
    : null;
  // A pyproject.toml that only configures tools (black, ruff, pytest) is no package pip could install.
  const installable =
    pyprojectText !== null && /^\[(?:project|build-system|tool\.poetry)\]/m.test(pyprojectText);
  const projectFiles = [
    ...(installable ? ['pyproject.toml'] : []),
    ...(names.includes('setup.py') ? ['setup.py'] : []),
  ];
  if (requirementsFiles.length === 0 && projectFiles.length === 0) return null;
  const pytestFrom = await pytestOf();
  const declared: DeclaredRequirements = { requirements: [], unchecked: [] };
  for (const file of requirementsFiles) await readRequirementsFile(directory, file, declared);
  const pyproject = installable ? tomlOf(pyprojectText) : null;
  if (pyproject) pyprojectDeclared(pyproject, declared);
  else if (installable) declared.unchecked.push('pyproject.toml (not valid TOML)');
  if (projectFiles.includes('setup.py') && !table(pyproject?.project))
    declared.unchecked.push("setup.py's install_requires (known only by running it)");
  // The DoD's pytest is needed too (the venv installs it when the image has none), unless already declared.
  if (
    pytestFrom !== undefined &&
    !declared.requirements.some((item) => normalizePythonName(item.name) === 'pytest')
  )
    declared.requirements.push({ name: 'pytest', specifier: '', from: `the DoD's pytest (${pytestFrom})` });
  const backend = table(pyproject?.['build-system'])?.['build-backend'];
  return {
    requirementsFiles,
    projectFiles,
    setuptools: typeof backend !== 'string' || backend.startsWith('setuptools'),
    ...(pytestFrom !== undefined ? { pytestFrom } : {}),
    declared,
  };
}

/** The virtual environment with the requirements and the project in it. */
export function venvCommands(project: PythonProject): DetectedCommand[] {
  const venv = PYTHON_VENV_DIR;
  const { requirementsFiles: requirements, projectFiles } = project;
  const commands: DetectedCommand[] = [
    {
      // Debian's Python refuses pip outside a venv; --system-site-packages lets the venv use the toolchain
      // layer's pytest and setuptools. The venv and the install's files are kept out of git status (the
      // sandbox repository's info/exclude), so they never count as the worker's uncommitted changes.
      command:
        `python3 -m venv --system-site-packages ${venv} && exclude="$(git rev-parse --git-path info/exclude)" && ` +
        `mkdir -p "$(dirname "$exclude")" && printf '%s\\n' '/${venv}/' '*.egg-info/' >> "$exclude"`,
      detectedFrom: [...projectFiles, ...requirements].join(', '),
    },
  ];
  if (requirements.length > 0)
    commands.push({
      command: `${venv}/bin/pip install ${requirements.map((file) => `-r ${file}`).join(' ')}`,
      detectedFrom: requirements.join(', '),
    });
  if (projectFiles.length > 0)
    // A setuptools build needs no package index: the venv sees the toolchain layer's setuptools.
    commands.push({
      command: `${venv}/bin/pip install${project.setuptools ? ' --no-build-isolation' : ''} -e .`,
      detectedFrom: projectFiles[0] as string,
    });
  // pytest from the toolchain layer when it has it (the venv sees it), else from the package index.
  if (project.pytestFrom !== undefined)
    commands.push({
      command: `${venv}/bin/python -c 'import pytest' 2>/dev/null || ${venv}/bin/pip install pytest`,
      detectedFrom: `the DoD's pytest (${project.pytestFrom})`,
    });
  return commands;
}

/**
 * The decision, pure: a venv where the image's python3 can make one (or the image could not be asked: the
 * venv's own failure then says what is wrong); else the image's Python as it is when nothing the project
 * declares is missing from it, or a refusal naming what is.
 */
export function decidePythonSetup(project: PythonProject, image: ImagePython | null): PythonSetupDecision {
  if (image === null || image.venv) return { kind: 'venv', commands: venvCommands(project) };
  const judged = judgeRequirements(project.declared.requirements, image);
  if (judged.unmet.length > 0) return { kind: 'refuse', unmet: judged.unmet };
  return { kind: 'system', met: judged.met, unchecked: [...judged.unchecked, ...project.declared.unchecked] };
}

/** The progress line of a `system` decision. */
export function systemPythonNotice(decision: { met: string[]; unchecked: string[] }): string {
  const has = decision.met.length > 0 ? `has ${decision.met.join(', ')}` : 'is asked for nothing to install';
  const unchecked =
    decision.unchecked.length > 0 ? `; not checked: ${decision.unchecked.slice(0, 5).join(', ')}` : '';
  return (
    "sandbox set-up detected: none for Python: the image's python3 cannot make a virtual environment " +
    `(no python3-venv) and ${has}, so the checks run with it${unchecked} (sandbox.setup overrides it)`
  );
}

/** The error of a `refuse` decision: what is missing, and the two fixes. Exit 4, before any worker run. */
export function pythonSetupError(unmet: readonly string[]): EnvironmentError {
  const shown = unmet.slice(0, 5).join(', ') + (unmet.length > 5 ? ` and ${unmet.length - 5} more` : '');
  return new EnvironmentError(
    'preflight_failed',
    `preflight: the detected Python set-up needs a virtual environment for ${shown}, which the image's ` +
      "python3 does not have, and the image's python3 cannot make one (no ensurepip: Debian's python3-venv is " +
      'not installed); no worker ran. Install `python3-venv` in the image (its Dockerfile: `apt-get install -y ' +
      'python3-venv`), or install what is missing there (Debian packages `python3-<name>`), or set ' +
      'sandbox.setup in agent-runner.yaml to the set-up the project needs (`[]` runs the checks with the ' +
      "image's Python as it is).",
    { details: { unmet } },
  );
}
