/**
 * Failures found before the first worker run, end to end (real CLI, real sandbox, real codex binary in the
 * image; a scripted model): a `sandbox.dockerfile` that names no file stops `run` before anything is made
 * (exit 2); a detected DoD whose program the image lacks (go.mod with the toolchain layer turned off) ends the
 * task at once with exit 4 and the fix, no worker ran, the note says why, no container is left.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { realProjectRepo, runRealProject } from '../support/real-project-run.js';

function containersOf(taskId: string): string[] {
  return execFileSync('docker', ['ps', '-aq', '--filter', `label=agent-runner.task=${taskId}`], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}

function branches(root: string): string {
  return execFileSync('git', ['branch', '--list'], { cwd: root, encoding: 'utf8' });
}

describe('preflight: failures found before the first worker run', () => {
  it('a sandbox.dockerfile that names no file: exit 2 with the key and the path; nothing made', async () => {
    const root = realProjectRepo('rp-nodockerfile', {
      'agent-runner.yaml': 'sandbox:\n  dockerfile: docker/Missing.Dockerfile\n',
      'package.json': '{ "name": "x", "version": "1.0.0", "scripts": { "test": "node --test" } }\n',
    });
    const taskId = `rp-nodf-${Date.now()}`;
    const run = await runRealProject(root, taskId, { 'a.test.js': "require('node:test')('a', () => {});\n" });
    expect(run.exitCode, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/sandbox\.dockerfile: .*docker\/Missing\.Dockerfile does not exist/);
    // Nothing was made: no branch, no worktree, no note, no container; the repository is as it was.
    expect(branches(root)).not.toContain(`agent-runner/${taskId}`);
    expect(run.stderr).not.toContain(`agent-runner/${taskId}`);
    expect(existsSync(path.join(root, '.agent-runner', 'worktrees', taskId))).toBe(false);
    expect(containersOf(taskId)).toEqual([]);
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: root, encoding: 'utf8' })).toBe('');
  });

  it('a detected DoD whose program the image lacks: exit 4 at once with the fix, no worker run', async () => {
    const root = realProjectRepo('rp-nogo', {
      'go.mod': 'module example.com/calc\n\ngo 1.22\n',
      'calc.go': 'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
      // The image as it is: no Go layer, so `go test ./...` (detected from go.mod) has no `go`.
      'agent-runner.yaml': 'sandbox:\n  toolchain: image\n',
    });
    const taskId = `rp-nogo-${Date.now()}`;
    const started = Date.now();
    const run = await runRealProject(root, taskId, { 'calc_test.go': 'package calc\n' });
    expect(run.exitCode, run.stderr).toBe(4);
    expect(run.summary?.state).toBe('FAILED');
    const reason = String(run.summary?.reason);
    expect(reason).toContain(
      'preflight: `go` not found in the sandbox, which DoD check go test (`go test ./...`) runs',
    );
    expect(reason).toContain('no worker ran');
    expect(reason).toMatch(/sandbox\.dockerfile|sandbox\.toolchains/);
    expect(run.events.some((event) => event.type === 'worker_started')).toBe(false);
    expect(run.note).toContain('preflight');
    expect(containersOf(taskId)).toEqual([]);
    // At once: well under what a worker run and a DoD would take.
    expect(Date.now() - started).toBeLessThan(60_000);
  });
});
