/**
 * Interrupts, crashes and resume, done for real on the CLI as a child process: kill -9 mid-run then
 * `resume` to COMPLETE; Ctrl-C mid-worker (uncommitted work on refs/agent-runner/wip/<ID>); a second Ctrl-C
 * that does not wait for the worker's grace; two runners on one task id.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  commandStarted,
  journalEvents,
  labelledContainers,
  readNote,
  runToEnd,
  SHORT_TIMEOUTS_YAML,
  startRunner,
  waitForJournalEvent,
  setupFaultTask,
  command,
  COMMIT_SLUG,
} from '../support/faults-harness.js';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import type { ScriptedChatServer } from '../support/scripted-chat-server.js';
import {
  type ScriptedResponsesServer,
  assistantMessage,
  type ScriptedReply,
} from '../support/scripted-responses-server.js';
import { git } from '../support/task-repo.js';

// Fresh scripted servers per test, so a failed test cannot leave script steps to the next one.
let chat: ScriptedChatServer;
let responses: ScriptedResponsesServer;

const say = (text: string): ScriptedReply => ({ kind: 'output', items: [assistantMessage(text)] });

async function setupRepo(taskId: string, yaml = SHORT_TIMEOUTS_YAML) {
  const task = await setupFaultTask(taskId, yaml);
  ({ chat, responses } = task);
  return task;
}

describe('interrupts, crashes and resume', () => {
  it('kill -9 of the runner mid-worker, then resume → COMPLETE with the earlier commit kept', async () => {
    const id = 'FAULT-KILL9';
    const { root, env } = await setupRepo(id);
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works, with notes.txt committed' }]) },
      { reply: runWorkerReply('Implement slugify with a test, commit, then write notes.txt.') },
    );
    responses.enqueue(command(COMMIT_SLUG), command('echo notes > notes.txt; sleep 600'));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], { cwd: root, env });
    await waitForJournalEvent(root, id, commandStarted('sleep 600'), runner);
    runner.child.kill('SIGKILL');
    const killed = await runner.exited;
    expect(killed.signal).toBe('SIGKILL');
    // What a crash leaves: a container whose runner is dead, a stale lock, a journal without an end.
    const orphaned = await labelledContainers(id, root);
    expect(orphaned).toHaveLength(1);
    expect(existsSync(path.join(root, '.agent-runner', 'runs', id, 'lock'))).toBe(true);
    expect(journalEvents(root, id).some((event) => event.type === 'task_finished')).toBe(false);

    chat.push(
      {
        reply: runWorkerReply('Commit notes.txt, then stop.', { mode: 'resume', patterns: ['commit_work'] }),
      },
      { reply: assessmentReply(true, ['AC-1'], 'slugify and notes.txt are committed; tests pass.') },
    );
    const resumeRequestIndex = responses.responseRequests().length;
    responses.enqueue(command("git add -A && git commit -q -m 'Add notes'"), say('Committed notes.txt.'));
    const resumed = await runToEnd(['resume', id, '--json'], { cwd: root, env });
    expect(resumed.stderr).toContain(`took over the lock of task ${id}`);
    expect(resumed.stderr).toMatch(/removed container agent-runner-FAULT-KILL9-\w+ of task FAULT-KILL9/);
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = JSON.parse(resumed.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    expect(summary).toMatchObject({ type: 'summary', state: 'COMPLETE', exitCode: 0 });
    // Both commits on the task branch: the one from before the crash and the one after.
    expect(git(root, 'log', '--format=%s', `agent-runner/${id}`).split('\n').slice(0, 2)).toEqual([
      'Add notes',
      'Add slugify',
    ]);
    // The codex thread was resumed: the resumed turn's request carries the earlier turn's history.
    const resumedRequest = responses.responseRequests()[resumeRequestIndex];
    expect(JSON.stringify(resumedRequest?.body)).toContain('sleep 600');
    const events = journalEvents(root, id);
    expect(events.filter((event) => event.type === 'task_started')).toHaveLength(2);
    expect(events.find((event) => event.type === 'worker_started' && event.mode === 'resume')).toBeTruthy();
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **COMPLETE**');
    expect(chat.remaining()).toBe(0);
    expect(existsSync(path.join(root, '.agent-runner', 'runs', id, 'lock'))).toBe(false);
    expect(await labelledContainers(id, root)).toEqual([]);
  });

  it('Ctrl-C mid-worker → NEEDS_REVIEW (interrupted), exit 130, uncommitted work on the WIP ref', async () => {
    const id = 'FAULT-SIGINT';
    const { root, env } = await setupRepo(id);
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify with a test and commit.') },
    );
    responses.enqueue(command(COMMIT_SLUG), command('echo draft > draft.txt; sleep 600'));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], { cwd: root, env });
    await waitForJournalEvent(root, id, commandStarted('sleep 600'), runner);
    runner.child.kill('SIGINT');
    const { code } = await runner.exited;
    expect(code).toBe(130);
    expect(runner.stderr()).toContain('SIGINT: stopping the worker');
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **NEEDS_REVIEW**');
    expect(note).toContain('interrupted');
    expect(note).toContain(`refs/agent-runner/wip/${id}`);
    // The uncommitted file is in the WIP commit; the commit made before the interrupt is on the branch.
    expect(git(root, 'show', `refs/agent-runner/wip/${id}:draft.txt`)).toBe('draft');
    expect(git(root, 'log', '-1', '--format=%s', `agent-runner/${id}`)).toBe('Add slugify');
    // The user's branch and files are untouched.
    expect(git(root, 'log', '-1', '--format=%s', 'main')).toBe('config');
    expect(git(root, 'status', '--porcelain', '--', '.', ':(exclude).agent-runner')).toBe('');
    expect(await labelledContainers(id, root)).toEqual([]);
  });

  it('a second Ctrl-C kills the worker without waiting for its grace, and the note is still written', async () => {
    const id = 'FAULT-SIGINT2';
    const { root, env } = await setupRepo(id, SHORT_TIMEOUTS_YAML.replace('grace: 2s', 'grace: 60s'));
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: runWorkerReply('Implement slugify.') },
    );
    // A worker that ignores SIGTERM: only SIGKILL (after the 60 s grace, or the second Ctrl-C) stops it.
    responses.enqueue(command("echo half > half.txt; trap '' TERM; sleep 600"));
    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], { cwd: root, env });
    await waitForJournalEvent(root, id, commandStarted('sleep 600'), runner);
    const interruptedAt = Date.now();
    runner.child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    runner.child.kill('SIGINT');
    const { code } = await runner.exited;
    expect(code).toBe(130);
    expect(Date.now() - interruptedAt).toBeLessThan(25_000);
    expect(runner.stderr()).toContain('stopping now');
    const note = readNote(root, id);
    expect(note).toContain('| **State** | **NEEDS_REVIEW**');
    expect(note).toContain(`refs/agent-runner/wip/${id}`);
    expect(git(root, 'show', `refs/agent-runner/wip/${id}:half.txt`)).toBe('half');
    expect(await labelledContainers(id, root)).toEqual([]);
  });

  it('a second runner of the same task id is refused (exit 2, naming the holder)', async () => {
    const id = 'FAULT-LOCK';
    // A long request timeout: the first runner holds the lock until the interrupt (which ends its hanging
    // Meta-agent call at once), however slow the machine is meanwhile.
    const { root, env } = await setupRepo(
      id,
      SHORT_TIMEOUTS_YAML.replace('requestTimeout: 5s', 'requestTimeout: 120s'),
    );
    // The first runner waits on the Meta-agent's plan until interrupted.
    chat.push({ hang: true });
    const first = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], { cwd: root, env });
    await waitForJournalEvent(root, id, (event) => event.type === 'sandbox_started', first);
    const second = await runToEnd(['run', '--prd', 'PRD.md', '--task-id', id], { cwd: root, env });
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(
      `Task ${id} is already being worked on by agent-runner run (pid ${first.pid}`,
    );
    const resume = await runToEnd(['resume', id], { cwd: root, env });
    expect(resume.code).toBe(2);
    expect(resume.stderr).toContain(`pid ${first.pid}`);
    const status = await runToEnd(['status'], { cwd: root, env });
    expect(status.stdout).toMatch(new RegExp(`FAULT-LOCK\\s+running\\s+.*pid ${first.pid} on `));
    // The refused runners changed nothing: the first one still finishes normally.
    first.child.kill('SIGINT');
    expect((await first.exited).code).toBe(130);
    expect(readNote(root, id)).toContain('| **State** | **NEEDS_REVIEW**');
    expect(journalEvents(root, id).filter((event) => event.type === 'task_started')).toHaveLength(1);
    expect(await labelledContainers(id, root)).toEqual([]);
  });
});
