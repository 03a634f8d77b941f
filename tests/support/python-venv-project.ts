/**
 * A Python project installed into a `.venv` by its set-up (docs/toolchains.md's way), its tests run from the venv.
 * Debian's toolchain layer has venv, pip and pytest; `--system-site-packages` gives the venv Debian's pytest and
 * setuptools, so the editable install needs no package index (this machine reaches none).
 */

/** What `.gitignore` adds for it. */
export const VENV_IGNORE = '.venv/\n*.egg-info/\n';

/** `pyproject.toml` (module `calc`) and `agent-runner.yaml` (set-up into `.venv`, pytest from it on `tests`). */
export const VENV_PROJECT_FILES: Record<string, string> = {
  'pyproject.toml':
    '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n' +
    '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.setuptools]\npy-modules = ["calc"]\n\n' +
    '[tool.pytest.ini_options]\n',
  'agent-runner.yaml': [
    'sandbox:',
    '  setup:',
    '    - python3 -m venv --system-site-packages .venv',
    '    - .venv/bin/pip install --no-index --no-build-isolation -e .',
    'dod:',
    '  checks:',
    '    - name: pytest',
    '      command: .venv/bin/python -P -m pytest -p no:cacheprovider tests',
    '',
  ].join('\n'),
};
