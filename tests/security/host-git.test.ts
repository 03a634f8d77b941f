/**
 * Git on the host runs nothing the worker chose (real CLI, real codex, real container). (a) The person's global
 * git config (the CLI's HOME) defines a filter `evil` whose smudge leaves a line in a canary file and changes
 * the content; the worker commits `.gitattributes` naming it for every path, and a file. Plain git runs the
 * filter on that very commit (a scratch clone); agent-runner's fast-forward of the person's worktree does not,
 * and the worktree holds the content as committed. (b) The worker plants a FIFO among the refs of its `.git`,
 * where plain host git blocks for good: the run ends within its limits with the problem named. Under gVisor the
 * FIFO stays inside the sandbox's own file system (the worker lists it, the host's directory never holds it) and
 * host git brings the work back as usual. (A FIFO at
 * `packed-refs`, `config`, `shallow` or `info/grafts` blocks the worker's own git in the container as well, for
 * the timeouts of the facts' execs, minutes; the unit tests of sandbox-git-files.ts cover those on the host.)
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { journalEvents, labelledContainers } from '../support/faults-harness.js';
import { runHostileTask, summaryOf } from '../support/hostile-worker.js';
import { git } from '../support/task-repo.js';
import { UNDER_RUNSC } from '../support/test-runtime.js';

/** A person's HOME whose global git config has the filter `evil`; its smudge writes `smudge <dir>` lines. */
function personHome(): { home: string; env: NodeJS.ProcessEnv; canary: () => string } {
  const home = mkdtempSync(path.join(tmpdir(), 'ar-sec-hostgit-home-'));
  onTestFinished(() => rmSync(home, { recursive: true, force: true }));
  const canary = path.join(home, 'canary');
  const smudge = path.join(home, 'smudge.sh');
  writeFileSync(smudge, `#!/bin/sh\necho "smudge $PWD" >> ${canary}\ntr a-z A-Z\n`);
  chmodSync(smudge, 0o755);
  writeFileSync(
    path.join(home, '.gitconfig'),
    `[user]\n\tname = Test Person\n\temail = person@example.test\n` +
      `[filter "evil"]\n\tsmudge = ${smudge}\n\tclean = cat\n\trequired = true\n`,
  );
  const env: NodeJS.ProcessEnv = { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') };
  // agent-runner's caches stay where they are: only git's global config is the test's.
  env.XDG_STATE_HOME = process.env.XDG_STATE_HOME ?? path.join(homedir(), '.local', 'state');
  return { home, env, canary: () => (existsSync(canary) ? readFileSync(canary, 'utf8') : '') };
}

/** Runs plain git as the person: their HOME, so their global config. */
function personGit(env: NodeJS.ProcessEnv, cwd: string, ...args: string[]): string {
  const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('GIT_')));
  return execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...base, ...env } });
}

describe('git on the host against worker-chosen programs and files', () => {
  it("never runs the person's filter named by the worker's .gitattributes", async () => {
    const person = personHome();
    const taskId = `sec-hostgit-filter-${randomUUID().slice(0, 6)}`;
    const run = await runHostileTask(taskId, {
      prepare: (task) => Object.assign(task.env, person.env),
      commands: [
        [
          "printf '* filter=evil\\n' > .gitattributes",
          "printf 'hello from the worker\\n' > greeting.txt",
          'git add -A && git commit -q -m "attributes naming the person\'s filter"',
        ].join('\n'),
      ],
    });
    const root = run.task.root;
    const branch = `agent-runner/${taskId}`;
    const worktree = path.join(root, '.agent-runner', 'worktrees', taskId);
    const ranDuringRun = person.canary();

    // The attack: the worker's commit is on the branch, and plain git checking it out runs the filter.
    expect(git(root, 'show', `${branch}:.gitattributes`), run.stderr).toBe('* filter=evil');
    const scratch = path.join(mkdtempSync(path.join(tmpdir(), 'ar-sec-hostgit-scratch-')), 'clone');
    onTestFinished(() => rmSync(path.dirname(scratch), { recursive: true, force: true }));
    personGit(person.env, path.dirname(scratch), 'clone', '-q', '-b', branch, root, scratch);
    expect(person.canary()).toContain(`smudge ${scratch}`);
    expect(readFileSync(path.join(scratch, 'greeting.txt'), 'utf8')).toBe('HELLO FROM THE WORKER\n');

    // It failed: nothing ran during the run, and the person's worktree holds the content as committed.
    expect(ranDuringRun).toBe('');
    expect(git(worktree, 'rev-parse', 'HEAD')).toBe(git(root, 'rev-parse', branch));
    expect(readFileSync(path.join(worktree, 'greeting.txt'), 'utf8')).toBe(
      `${git(root, 'show', `${branch}:greeting.txt`)}\n`,
    );
  });

  it('ends with the problem named when the worker puts a FIFO where host git reads', async () => {
    const taskId = `sec-hostgit-fifo-${randomUUID().slice(0, 6)}`;
    const started = Date.now();
    const run = await runHostileTask(taskId, {
      commands: [
        [
          'echo work > work.txt && git add -A && git commit -q -m "work before the plant"',
          'mkfifo .git/refs/tags/planted && ls -l .git/refs/tags',
        ].join('\n'),
      ],
    });
    const elapsed = Date.now() - started;
    const root = run.task.root;
    const sandboxGit = path.join(root, '.agent-runner', 'sandboxes', taskId, 'repo', '.git');

    if (UNDER_RUNSC) {
      // gVisor keeps a FIFO made on a bind mount inside its own file system: the worker sees it, the host's
      // directory never holds it, so host git has nothing to block on and brings the work back.
      const recorded = JSON.stringify(journalEvents(root, taskId).filter((e) => e.type === 'run_recorded'));
      expect(recorded, run.stderr).toMatch(/prw[-rwx]{7}[^"]* planted/);
      expect(existsSync(path.join(sandboxGit, 'refs', 'tags', 'planted'))).toBe(false);
      expect(run.code).not.toBeNull();
      expect(elapsed).toBeLessThan(120_000);
      expect(git(root, 'log', '--format=%s', `agent-runner/${taskId}`)).toContain('work before the plant');
      expect(await labelledContainers(taskId, root)).toEqual([]);
      return;
    }

    // The attack: the FIFO is where the worker put it, and plain host git reading that repository blocks.
    expect(lstatSync(path.join(sandboxGit, 'refs', 'tags', 'planted')).isFIFO(), run.stderr).toBe(true);
    const plain = spawn('git', ['-c', 'safe.directory=*', `--git-dir=${sandboxGit}`, 'for-each-ref'], {
      detached: true,
      stdio: 'ignore',
    });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(plain.exitCode).toBeNull();
    process.kill(-(plain.pid as number), 'SIGKILL');

    // It failed: the run ended on its own, well within its limits, naming the FIFO; nothing is left running.
    expect(run.code).not.toBeNull();
    expect(elapsed).toBeLessThan(120_000);
    const summary = summaryOf(run);
    expect(summary.type).toBe('summary');
    expect(summary.state).not.toBe('COMPLETE');
    const facts = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { type: string; facts?: { problems?: string[] } })
      .filter((event) => event.type === 'facts');
    expect(facts.at(-1)?.facts?.problems?.join('\n')).toContain(
      'refs/tags/planted is a symlink or a special file (a FIFO)',
    );
    const note = readFileSync(path.join(root, '.agent-runner', `task-${taskId}.md`), 'utf8');
    expect(note).toContain('refs/tags/planted is a symlink or a special file (a FIFO)');
    expect(await labelledContainers(taskId, root)).toEqual([]);
    expect(git(root, 'rev-parse', `agent-runner/${taskId}`)).toBe(git(root, 'rev-parse', 'main'));
  });
});
