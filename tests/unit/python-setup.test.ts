import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { detectSetup } from '../../src/workspace/checks/detect-setup.js';
import {
  decidePythonSetup,
  pythonSetupError,
  readPythonProject,
  venvCommands,
  type PythonProject,
} from '../../src/workspace/checks/python-setup.js';
import { markerHolds, parseRequirement } from '../../src/workspace/checks/python-requirements.js';
import { parseImagePython, type ImagePython } from '../../src/toolchain/image-python.js';
import { EXIT_CODES } from '../../src/errors.js';

function repo(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'python-setup-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const MARKERS = {
  python_version: '3.11',
  python_full_version: '3.11.2',
  os_name: 'posix',
  sys_platform: 'linux',
  platform_system: 'Linux',
  platform_machine: 'x86_64',
  platform_python_implementation: 'CPython',
  implementation_name: 'cpython',
  implementation_version: '3.11.2',
};

/** Debian bookworm with python3-pytest and no python3-venv (what the probe answered there). */
const DEBIAN_PYTEST: ImagePython = {
  venv: false,
  distributions: {
    pytest: '7.2.1',
    pluggy: '1.0.0+repack',
    packaging: '23.0',
    iniconfig: '1.1.1',
    six: '1.16.0',
  },
  markers: MARKERS,
};
const WITH_VENV: ImagePython = { ...DEBIAN_PYTEST, venv: true };

const PYPROJECT =
  '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n' +
  '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\n';

async function project(files: Record<string, string>, pytestFrom?: string): Promise<PythonProject> {
  const dir = repo(files);
  const read = await readPythonProject(dir, Object.keys(files), async () => pytestFrom);
  if (read === null) throw new Error('no Python project read');
  return read;
}

describe('Python set-up: the decision over the project and the image', () => {
  it("a pytest-only project on Debian's python3-pytest without python3-venv: no venv, the image's Python", async () => {
    const facts = await project(
      { 'pyproject.toml': PYPROJECT, 'requirements-dev.txt': 'pytest>=7  # the tests\n' },
      'pyproject.toml',
    );
    const decision = decidePythonSetup(facts, DEBIAN_PYTEST);
    expect(decision).toEqual({
      kind: 'system',
      met: ['pytest 7.2.1 (requirements-dev.txt: pytest>=7)'],
      unchecked: [],
    });
  });

  it('a project that declares nothing to install, on an image without venv: no venv', async () => {
    const facts = await project({ 'pyproject.toml': PYPROJECT });
    expect(decidePythonSetup(facts, DEBIAN_PYTEST)).toEqual({ kind: 'system', met: [], unchecked: [] });
  });

  it('requirements that need installing, on an image with python3-venv: the venv as before', async () => {
    const facts = await project(
      { 'pyproject.toml': PYPROJECT, 'requirements.txt': 'requests>=2\n' },
      'pyproject.toml',
    );
    const decision = decidePythonSetup(facts, WITH_VENV);
    expect(decision).toEqual({ kind: 'venv', commands: venvCommands(facts) });
    expect(venvCommands(facts).map((item) => item.command)).toEqual([
      expect.stringMatching(/^python3 -m venv --system-site-packages \.venv && /),
      '.venv/bin/pip install -r requirements.txt',
      '.venv/bin/pip install --no-build-isolation -e .',
      ".venv/bin/python -c 'import pytest' 2>/dev/null || .venv/bin/pip install pytest",
    ]);
    // A venv-capable image gets the venv even when nothing is missing: it installs the project itself too.
    const satisfied = await project({ 'pyproject.toml': PYPROJECT, 'requirements.txt': 'pytest\n' });
    expect(decidePythonSetup(satisfied, WITH_VENV).kind).toBe('venv');
  });

  it('an image that could not be asked (or has no python3): the venv as before, its failure says why', async () => {
    const facts = await project({ 'requirements.txt': 'requests\n' });
    expect(decidePythonSetup(facts, null)).toEqual({ kind: 'venv', commands: venvCommands(facts) });
  });

  it('a project that needs a venv on an image without python3-venv: refused with what is missing', async () => {
    const facts = await project(
      { 'requirements.txt': 'requests>=2\nPyYAML\n', 'requirements-test.txt': 'pytest>=8\n' },
      'requirements-test.txt',
    );
    expect(decidePythonSetup(facts, DEBIAN_PYTEST)).toEqual({
      kind: 'refuse',
      unmet: [
        'pytest>=8 (requirements-test.txt; 7.2.1 installed)',
        'requests>=2 (requirements.txt; not installed)',
        'PyYAML (requirements.txt; not installed)',
      ],
    });
    // The DoD's pytest counts: an image with neither venv nor pytest cannot run it.
    const bare = await project({ 'pyproject.toml': PYPROJECT }, 'pyproject.toml');
    expect(decidePythonSetup(bare, { ...DEBIAN_PYTEST, distributions: {} })).toEqual({
      kind: 'refuse',
      unmet: ["pytest (the DoD's pytest (pyproject.toml); not installed)"],
    });
  });

  it('the refusal: one message with both fixes, preflight_failed, exit 4', () => {
    const error = pythonSetupError(['requests>=2 (requirements.txt; not installed)']);
    expect(error.code).toBe('preflight_failed');
    expect(error.exitCode).toBe(EXIT_CODES.environment);
    expect(error.message).toContain('requests>=2 (requirements.txt; not installed)');
    expect(error.message).toContain('Install `python3-venv` in the image');
    expect(error.message).toContain('set sandbox.setup in agent-runner.yaml');
    expect(error.message).toContain('no worker ran');
  });

  it('pip syntax around the requirements: includes, the project itself, options, hashes, markers, names', async () => {
    const facts = await project({
      'requirements-dev.txt':
        '-r requirements/base.txt\n-e .[test]\n--index-url https://example.org/simple\n-c constraints.txt\n' +
        'pytest==7.* \\\n    --hash=sha256:0123456789abcdef\n' +
        'tomli>=1; python_version < "3.11"\nwindows-curses; sys_platform == "win32"\n' +
        'typing_extensions; python_version >= "3.11"\n',
      'requirements/base.txt': 'Six>=1.10\n',
    });
    expect(facts.declared.unchecked).toEqual([]);
    expect(facts.declared.requirements.map((item) => `${item.name}${item.specifier} ${item.from}`)).toEqual([
      'Six>=1.10 requirements/base.txt',
      'pytest==7.* requirements-dev.txt',
      'tomli>=1 requirements-dev.txt',
      'windows-curses requirements-dev.txt',
      'typing_extensions requirements-dev.txt',
    ]);
    // tomli and windows-curses are not for this Python; typing_extensions is, and Debian's is named with a dash.
    const image = {
      ...DEBIAN_PYTEST,
      distributions: { ...DEBIAN_PYTEST.distributions, 'typing-extensions': '4.4.0' },
    };
    expect(decidePythonSetup(facts, image)).toMatchObject({
      kind: 'system',
      met: [
        'Six 1.16.0 (requirements/base.txt: Six>=1.10)',
        'pytest 7.2.1 (requirements-dev.txt: pytest==7.*)',
        'typing_extensions 4.4.0 (requirements-dev.txt: typing_extensions)',
      ],
    });
  });

  it('what only pip can judge is reported as unchecked, never refused on', async () => {
    const facts = await project({
      'setup.py': 'from setuptools import setup\nsetup()\n',
      'requirements.txt':
        'calc @ https://example.org/calc.zip\n-e git+https://example.org/x.git#egg=x\n./vendor/y\n',
    });
    const decision = decidePythonSetup(facts, DEBIAN_PYTEST);
    expect(decision).toEqual({
      kind: 'system',
      met: [],
      unchecked: [
        'requirements.txt: calc @ https://example.org/calc.zip',
        'requirements.txt: -e git+https://example.org/x.git#egg=x',
        'requirements.txt: ./vendor/y',
        "setup.py's install_requires (known only by running it)",
      ],
    });
  });

  it("pyproject.toml's dependencies count; dynamic ones and poetry's table are unchecked", async () => {
    const facts = await project({
      'pyproject.toml':
        '[project]\nname = "calc"\nversion = "0.1.0"\ndynamic = ["dependencies"]\n' +
        'dependencies = [\n  "packaging>=21",\n  "attrs",\n]\n[tool.poetry.dependencies]\npython = "^3.11"\nrich = "^13"\n',
    });
    expect(decidePythonSetup(facts, DEBIAN_PYTEST)).toEqual({
      kind: 'refuse',
      unmet: ['attrs (pyproject.toml; not installed)'],
    });
    expect(facts.declared.unchecked).toEqual([
      "pyproject.toml's dynamic dependencies",
      "pyproject.toml's [tool.poetry.dependencies]: rich",
    ]);
  });

  it('PEP 508 markers: versions compared as versions, unknown variables undecided', () => {
    const marker = (line: string) => parseRequirement(`x; ${line}`, 'f')?.marker;
    const holds = (line: string) => markerHolds(marker(line)!, MARKERS);
    expect(holds('python_version < "3.11"')).toBe(false);
    expect(holds('python_version >= "3.9"')).toBe(true);
    expect(holds('python_full_version == "3.11.2" and sys_platform == "linux"')).toBe(true);
    expect(holds('sys_platform == "win32" or platform_machine == "x86_64"')).toBe(true);
    expect(holds('"linux" in sys_platform')).toBe(true);
    expect(holds('extra == "test"')).toBe(false);
    expect(markerHolds(marker('platform_release == "6.1"')!, {})).toBeUndefined();
  });
});

describe("the image's Python as the probe reports it", () => {
  it('reads the probe, names normalized; anything else is no answer', () => {
    const output = JSON.stringify({
      venv: false,
      distributions: { PyYAML: '6.0', 'zope.interface': '5.5.2', pytest: '7.2.1' },
      markers: MARKERS,
    });
    expect(parseImagePython(output)).toEqual({
      venv: false,
      distributions: { pyyaml: '6.0', 'zope-interface': '5.5.2', pytest: '7.2.1' },
      markers: MARKERS,
    });
    expect(parseImagePython('')).toBeNull();
    expect(parseImagePython('{"venv": "yes"}')).toBeNull();
    expect(parseImagePython('Traceback (most recent call last):')).toBeNull();
  });
});

describe('set-up detection with the image asked', () => {
  it("no commands and one progress line where the image's Python has it all; the refusal thrown", async () => {
    const dir = repo({ 'pyproject.toml': PYPROJECT, 'requirements-dev.txt': 'pytest\n' });
    const notices: string[] = [];
    let asked = 0;
    const detection = {
      imagePython: async () => {
        asked += 1;
        return DEBIAN_PYTEST;
      },
      onNotice: (line: string) => notices.push(line),
    };
    expect(await detectSetup(dir, detection)).toEqual([]);
    expect(asked).toBe(1);
    expect(notices).toEqual([
      "sandbox set-up detected: none for Python: the image's python3 cannot make a virtual environment " +
        '(no python3-venv) and has pytest 7.2.1 (requirements-dev.txt: pytest), so the checks run with it ' +
        '(sandbox.setup overrides it)',
    ]);
    const needs = repo({ 'requirements.txt': 'requests\n' });
    await expect(detectSetup(needs, detection)).rejects.toMatchObject({ code: 'preflight_failed' });
    // A project with no Python files never asks the image.
    asked = 0;
    expect(await detectSetup(repo({ 'go.mod': 'module m\n\ngo 1.22\n' }), detection)).toEqual([]);
    expect(asked).toBe(0);
  });
});
