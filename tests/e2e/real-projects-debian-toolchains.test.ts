/**
 * A real project with go.mod, pyproject.toml and Cargo.toml and no Dockerfile, end to end (real CLI, codex and
 * sandbox; a scripted model): it gets Go, Python and Rust from Debian's packages (the same layer as
 * tests/integration/toolchain-image.test.ts, so it is built once for both) and ends COMPLETE with go test,
 * cargo test and pytest passed.
 */
import { describe, expect, it } from 'vitest';
import { lastDod, realProjectRepo, runRealProject } from '../support/real-project-run.js';

const PYTHON_IGNORE = '__pycache__/\n.pytest_cache/\n';
const CALC_PY = 'def add(a, b):\n    return a + b\n';
const TEST_CALC_PY = 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n';

describe('real projects: toolchains from Debian', () => {
  it("Go, Python and Rust from Debian's packages (no Dockerfile): COMPLETE with go test, cargo test and pytest passed", async () => {
    const root = realProjectRepo('rp-debian', {
      '.gitignore': `${PYTHON_IGNORE}target/\nCargo.lock\n`,
      'go.mod': 'module example.com/calc\n\ngo 1.22\n',
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
      'pyproject.toml': '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\n',
      'calc.py': CALC_PY,
      'Cargo.toml': '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
      'src/lib.rs':
        'pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n',
    });
    const run = await runRealProject(root, `rp-debian-${Date.now()}`, {
      'calc_test.go':
        'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("sum")\n\t}\n}\n',
      'test_calc.py': TEST_CALC_PY,
    });
    expect(run.summary?.state, run.stderr).toBe('COMPLETE');
    expect(lastDod(run)).toMatchObject({
      status: 'passed',
      results: [
        { command: 'go test ./...', status: 'passed' },
        { command: 'cargo test', status: 'passed' },
        { command: 'python3 -m pytest', status: 'passed' },
      ],
    });
    expect(run.stderr).toContain('Go 1.22 (go.mod: 1.22; Debian bookworm-backports)');
    expect(run.stderr).toContain('Rust with cargo (Cargo.toml; Debian rustc-web)');
    // The layer's first build downloads Debian's packages: minutes, once per machine.
  }, 900_000);
});
