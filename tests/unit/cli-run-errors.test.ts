/** `run` refuses bad input before anything starts: one clear message, exit 2, nothing created. */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import { createNodeRepo } from '../support/task-repo.js';

function repoWithConfig(config: string | null) {
  const repo = createNodeRepo();
  onTestFinished(repo.remove);
  if (config !== null) writeFileSync(path.join(repo.root, 'agent-runner.yaml'), config);
  return repo.root;
}

describe('run with bad input', () => {
  it.each([
    ['an unknown key', 'sandbox:\n  memroy: 4g\n', /sandbox\.memroy: unknown key/],
    ['a wrong type', 'limits:\n  maxIterations: lots\n', /limits\.maxIterations: .*expected number/],
    [
      'a bad size',
      'sandbox:\n  memory: huge\n',
      /sandbox\.memory: expected a size like 4g \(in .*agent-runner\.yaml\)/,
    ],
    ['invalid YAML', 'meta: [unclosed\n', /agent-runner\.yaml:\d+:\d+: invalid YAML/],
  ])('exits 2 on %s in agent-runner.yaml, naming the path', async (_name, config, message) => {
    const root = repoWithConfig(config);
    const result = await runCliCaptured(['run', '--prd', 'PRD.md'], { cwd: root, env: { CI: 'true' } });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(existsSync(path.join(root, '.agent-runner'))).toBe(false);
  });

  it('exits 2 on a bad flag value', async () => {
    const root = repoWithConfig(null);
    const result = await runCliCaptured(['run', '--prd', 'PRD.md', '--timeout', 'soon'], {
      cwd: root,
      env: { CI: 'true' },
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/limits\.wallClock: expected a duration like 2h \(in command-line flags\)/);
  });

  it('exits 2 on a --forge that is no forge, before any clone; --forge with --detach is refused', async () => {
    const root = repoWithConfig(null);
    const env = { CI: 'true', XDG_STATE_HOME: path.join(root, '.state') };
    const repo = ['--repo', 'file:///nowhere/app.git'];
    const bad = await runCliCaptured(['run', '--prd', 'PRD.md', ...repo, '--forge', 'gitea'], {
      cwd: root,
      env,
    });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--forge "gitea" is no forge: give github');
    const variable = await runCliCaptured(['run', '--prd', 'PRD.md', ...repo], {
      cwd: root,
      env: { ...env, AGENT_RUNNER_FORGE: 'bitbucket' },
    });
    expect(variable.exitCode).toBe(2);
    expect(variable.stderr).toContain('AGENT_RUNNER_FORGE "bitbucket" is no forge');
    expect(existsSync(env.XDG_STATE_HOME)).toBe(false);
    const detached = await runCliCaptured(['run', '--prd', 'PRD.md', '--detach', '--forge', 'gitlab'], {
      cwd: root,
      env,
    });
    expect(detached.exitCode).toBe(2);
    expect(detached.stderr).toContain('--forge is not available with --detach');
  });

  it('exits 2 when --prd is missing', async () => {
    const result = await runCliCaptured(['run'], { cwd: repoWithConfig(null) });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('Give the task with exactly one of --prd FILE and --from-issue URL.');
  });
});
