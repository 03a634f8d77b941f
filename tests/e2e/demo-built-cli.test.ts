/**
 * The README's main job, as a user runs it: `examples/run-demo.sh` starts the built, bundled CLI
 * (`bin/agent-runner.js` → `dist/cli.js`), not the TypeScript sources the other tests import. A bundling
 * mistake (a dependency the bundler cannot follow, a path computed from the module's own location) only
 * shows here. It runs with the default configuration (no AGENT_RUNNER_RUNTIME, which the suite otherwise sets):
 * `sandbox.runtime: auto`, so runsc where the engine registers it (scripts/setup.sh does where it can).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the demo through the built CLI', () => {
  it('ends COMPLETE with its note, exit 0', () => {
    expect(
      existsSync(path.join(ROOT, 'dist', 'cli.js')),
      'dist/cli.js is missing: run `npm run build` (scripts/setup.sh does)',
    ).toBe(true);
    const parent = mkdtempSync(path.join(tmpdir(), 'ar-demo-built-'));
    onTestFinished(() => rmSync(parent, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = { ...process.env, AGENT_RUNNER_DEMO_DIR: parent };
    delete env.OPENAI_API_KEY;
    delete env.AGENT_RUNNER_RUNTIME;
    const result = spawnSync('bash', [path.join(ROOT, 'examples', 'run-demo.sh')], {
      env,
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(result.status, `stderr:\n${result.stderr}`).toBe(0);
    const note = readFileSync(
      path.join(parent, 'slugify-demo', '.agent-runner', 'task-DEMO-SLUGIFY.md'),
      'utf8',
    );
    expect(note).toMatch(/\*\*State\*\* \| \*\*COMPLETE\*\*/);
    // The default runtime: gVisor where the engine registers it, else runc with the reason.
    const registered = spawnSync('docker', ['info', '--format', '{{json .Runtimes}}'], { encoding: 'utf8' });
    expect(note).toMatch(
      registered.stdout.includes('"runsc"')
        ? /Sandbox runtime \| runsc \(sandbox\.runtime: auto, and runsc is registered/
        : /Sandbox runtime \| runc \(sandbox\.runtime: auto, and runsc is not registered/,
    );
    // The script prints the note it found, so what a user sees is the note on disk.
    expect(result.stdout).toContain(note.split('\n')[0]);
  });
});
