/**
 * Ctrl-C on a PRD split into subtasks, for real on the CLI as a child process: both subtasks' workers are
 * mid-command when SIGINT arrives; every worker stops, each subtask's uncommitted work is saved on its own WIP
 * ref, every note is written, exit 130, no container is left; then `resume <ID>` continues the graph to
 * COMPLETE.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  command,
  commandStarted,
  forceRemoveContainers,
  labelledContainers,
  readNote,
  runToEnd,
  setupFaultTask,
  SHORT_TIMEOUTS_YAML,
  startRunner,
  waitForJournalEvent,
} from '../support/faults-harness.js';
import { assessmentReply, decompositionReply, reviewReply, runWorkerReply } from '../support/meta-replies.js';
import { assistantMessage } from '../support/scripted-responses-server.js';
import { git, writeFileCommand } from '../support/task-repo.js';

const SUBTASKS = ['north', 'south'];

/**
 * Matches the Meta-agent requests of one subtask only: its prompt's heading (`# Task <ID>`, JSON-escaped in the
 * request). The bare task id is not enough: after the interrupt, each subtask's memory holds the other's note.
 */
const taskHeading = (taskId: string) => `# Task ${taskId}\\n`;

describe('Ctrl-C on a split project', () => {
  it('stops every worker, saves each subtask on its WIP ref, writes every note, exit 130; resume continues', async () => {
    const id = 'FAULT-PAR-SIGINT';
    const { root, env, chat, responses } = await setupFaultTask(
      id,
      `${SHORT_TIMEOUTS_YAML}parallel:\n  split: always\n  max: 2\n`,
    );
    for (const sub of SUBTASKS) onTestFinished(() => forceRemoveContainers(`${id}--${sub}`, root));
    chat.push({
      reply: decompositionReply(
        id,
        SUBTASKS.map((sub) => ({
          id: sub,
          title: `Add ${sub}()`,
          write: [`${sub}.js`, `test/${sub}.test.js`],
        })),
      ),
    });
    for (const sub of SUBTASKS) {
      chat.push({
        reply: runWorkerReply(`Implement ${sub}() with a test and commit.`),
        match: `${id}--${sub}`,
      });
      responses.enqueue({
        ...command(`echo draft-${sub} > ${sub}.js; sleep 600`),
        match: `${id}--${sub}`,
      });
    }

    const runner = startRunner(['run', '--prd', 'PRD.md', '--task-id', id, '--json'], { cwd: root, env });
    // Both workers at once, each in the middle of its command.
    for (const sub of SUBTASKS)
      await waitForJournalEvent(root, `${id}--${sub}`, commandStarted('sleep 600'), runner, 120_000);
    runner.child.kill('SIGINT');
    const { code } = await runner.exited;
    expect(code, runner.stderr()).toBe(130);

    for (const sub of SUBTASKS) {
      const taskId = `${id}--${sub}`;
      const note = readNote(root, taskId);
      expect(note).toContain('| **State** | **NEEDS_REVIEW**');
      expect(note).toContain('interrupted');
      expect(note).toContain(`refs/agent-runner/wip/${taskId}`);
      expect(git(root, 'show', `refs/agent-runner/wip/${taskId}:${sub}.js`)).toBe(`draft-${sub}`);
      expect(await labelledContainers(taskId, root)).toEqual([]);
    }
    // The parent note: the plan with both subtasks, neither merged.
    const parent = readNote(root, id);
    expect(parent).not.toBe('');
    for (const sub of SUBTASKS) expect(parent).toContain(`task-${id}--${sub}.md`);
    expect(await labelledContainers(id, root)).toEqual([]);
    expect(git(root, 'log', '-1', '--format=%s', 'main')).toBe('config');
    expect(git(root, 'status', '--porcelain', '--', '.', ':(exclude).agent-runner')).toBe('');
    expect(existsSync(path.join(root, '.agent-runner', 'runs', id, 'lock'))).toBe(false);

    // resume <ID>: the graph continues; each subtask continues from its own journal, then is reviewed and merged.
    for (const sub of SUBTASKS) {
      const taskId = `${id}--${sub}`;
      chat.push(
        // Each matched by its request too: the review is asked as soon as the checks passed, beside the assessment.
        {
          reply: runWorkerReply(`Finish ${sub}() with its test and commit.`, { mode: 'resume' }),
          match: [taskHeading(taskId), 'Reply with one `next_action` message.'],
        },
        {
          reply: assessmentReply(true, ['AC-1'], `${sub}() is implemented and tested.`),
          match: [taskHeading(taskId), 'Reply with one `completion_assessment` message.'],
        },
        { reply: reviewReply(taskId), match: `Review subtask ${taskId}.` },
      );
      const test = `const test = require('node:test');\nconst assert = require('node:assert');\ntest('${sub}', () => assert.strictEqual(require('../${sub}.js').${sub}(), '${sub}'));\n`;
      responses.enqueue(
        {
          ...command(
            `mkdir -p test && ${writeFileCommand(`${sub}.js`, `exports.${sub} = () => '${sub}';\n`)}\n${writeFileCommand(`test/${sub}.test.js`, test)}\ngit add -A && git commit -q -m 'Add ${sub}'`,
          ),
          match: taskId,
        },
        { kind: 'output', items: [assistantMessage(`Done: ${sub}`)], match: taskId },
      );
    }
    const resumed = await runToEnd(['resume', id, '--json'], { cwd: root, env });
    expect(resumed.code, `${resumed.stderr}\n${resumed.stdout.slice(-4000)}`).toBe(0);
    const summary = JSON.parse(resumed.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, unknown>;
    expect(summary).toMatchObject({ type: 'summary', state: 'COMPLETE', exitCode: 0 });
    const files = git(root, 'ls-tree', '--name-only', '-r', `agent-runner/${id}`).split('\n');
    expect(files).toEqual(expect.arrayContaining(['north.js', 'south.js', 'test/north.test.js']));
    expect(readNote(root, id)).toMatch(/\| `north` \|.*\| merged \|/);
    expect(chat.remaining()).toBe(0);
    for (const sub of SUBTASKS) expect(await labelledContainers(`${id}--${sub}`, root)).toEqual([]);
  });
});
