/**
 * What the parallel-work end-to-end files share (tests/e2e/parallel-*.test.ts). Parallel work end to end: `agent-runner run` with the real CLI, real git, real Docker sandboxes and the
 * real codex binary; only the models are scripted, and they answer each subtask by matching its task id in
 * the request (subtasks run at once, so their calls interleave).
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { createDockerClient } from '../../src/sandbox/docker-client.js';
import { runCliCaptured } from './cli.js';
import { assessmentReply, reviewReply, runWorkerReply } from './meta-replies.js';
import type { ScriptedModels } from './scripted-models.js';
import { assistantMessage, commandCall, type ScriptedReply } from './scripted-responses-server.js';
import { createNodeRepo, git, writeFileCommand } from './task-repo.js';

const docker = createDockerClient();

/** A codex turn for the worker whose prompt names `match`: runs the commands, then says it is done. */
export function codexTurn(match: string, commands: string[]): ScriptedReply[] {
  return [
    ...commands.map((command): ScriptedReply => ({ kind: 'output', items: [commandCall(command)], match })),
    { kind: 'output', items: [assistantMessage(`Done: ${match}`)], match },
  ];
}

/**
 * The Meta-agent's part of one subtask: run the worker once, judge it done, review it ok. Each matched by its
 * request as well as the task id: the review is asked as soon as the checks passed, beside the assessment.
 */
export function subtaskMeta(taskId: string) {
  return [
    {
      reply: runWorkerReply('Implement it with a test, run npm test, commit.'),
      match: [taskId, NEXT_ACTION],
    },
    {
      reply: assessmentReply(true, ['AC-1'], 'Implemented, tested and committed.'),
      match: [taskId, ASSESSMENT],
    },
    { reply: reviewReply(taskId), match: `Review subtask ${taskId}.` },
  ];
}

/** What a loop decision's and an assessment's requests end with (src/meta/meta-agent.ts). */
export const NEXT_ACTION = 'Reply with one `next_action` message.';
export const ASSESSMENT = 'Reply with one `completion_assessment` message.';

export const writeAndCommit = (files: Record<string, string>, message: string) => [
  Object.entries(files)
    .map(([file, content]) => `mkdir -p ${path.posix.dirname(file)} && ${writeFileCommand(file, content)}`)
    .join('\n'),
  // Long enough for two workers to be seen at work at the same time.
  `sleep 2 && git add -A && git commit -q -m ${JSON.stringify(message)}`,
];

/** A feature test that passes only while its feature is the only one (two of them cannot merge). */
export const onlyFeature = (name: string) =>
  `const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\nconst path = require('node:path');\ntest('${name} is the only feature', () => assert.deepStrictEqual(fs.readdirSync(path.join(__dirname, '..', 'features')), ['${name}.js']));\n`;
/** A feature test that passes while its feature is there. */
export const hasFeature = (name: string) =>
  `const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\nconst path = require('node:path');\ntest('${name} is a feature', () => assert.ok(fs.readdirSync(path.join(__dirname, '..', 'features')).includes('${name}.js')));\n`;
/** A subtask that adds `features/<file>.js` with its test, checked by running that test. */
export const featureSubtask = (id: string, file: string) => ({
  id,
  title: `Add feature ${file}`,
  write: [`features/${file}.js`, `test/${file}.test.js`],
  check: `node --test test/${file}.test.js`,
});

/** alpha and beta each add their feature with a test that passes only while it is the only feature. */
export const onlyFeatureTurns = (id: string) => [
  ...codexTurn(
    `${id}--alpha`,
    writeAndCommit({ 'features/a.js': 'module.exports = 1;\n', 'test/a.test.js': onlyFeature('a') }, 'Add a'),
  ),
  ...codexTurn(
    `${id}--beta`,
    writeAndCommit({ 'features/b.js': 'module.exports = 2;\n', 'test/b.test.js': onlyFeature('b') }, 'Add b'),
  ),
];

/** The Meta-agent's part of the project's first fix-up: instruct its worker, judge it done, review it ok. */
export const fixupMeta = (id: string, instruction: string) => [
  { reply: runWorkerReply(instruction), match: [`${id}--fixup-1`, NEXT_ACTION] },
  {
    reply: assessmentReply(true, ['AC-1'], 'The combined tree passes.'),
    match: [`${id}--fixup-1`, ASSESSMENT],
  },
  { reply: reviewReply(`${id}--fixup-1`), match: `Review subtask ${id}--fixup-1.` },
];

export type Event = { type: string; at: string; subtask?: string; [key: string]: unknown };

/** Runs `agent-runner run` on a new project repository whose PRD splits, against `models`. */
export function projectRunner(models: ScriptedModels) {
  return async function runProject(
    taskId: string,
    prd: string,
    max: number,
    extraConfig = '',
    split = 'always',
  ) {
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    writeFileSync(path.join(repo.root, 'BIG.md'), prd);
    writeFileSync(
      path.join(repo.root, 'agent-runner.yaml'),
      `parallel:\n  split: ${split}\n  max: ${max}\n${extraConfig}`,
    );
    git(repo.root, 'add', '-A');
    git(repo.root, 'commit', '-q', '-m', 'project PRD');
    onTestFinished(async () => {
      // This run's containers: other runs on the same engine (another checkout's tests) use the same task ids.
      const left = (await docker.listContainers({ all: true })).filter(
        (container) =>
          (container.Labels['agent-runner.task'] ?? '').startsWith(taskId) &&
          container.Labels['agent-runner.repo'] === realpathSync(repo.root),
      );
      expect(left).toEqual([]);
    });
    const result = await runCliCaptured(['run', '--prd', 'BIG.md', '--task-id', taskId, '--json'], {
      cwd: repo.root,
      env: {
        ...process.env,
        OPENAI_BASE_URL: models.chat.url,
        OPENAI_API_KEY: 'e2e-parallel-key',
        AGENT_RUNNER_WORKER_BASE_URL: models.responses.baseUrl('127.0.0.1'),
        AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
        CI: 'true',
      },
    });
    const events = result.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Event);
    const summary = events.at(-1) as Event & { state: string; notePath: string; exitCode: number };
    const projectJournal = path.join(repo.root, '.agent-runner', 'runs', taskId, 'project.jsonl');
    const journal = (existsSync(projectJournal) ? readFileSync(projectJournal, 'utf8') : '')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Event);
    return { repo, result, events, summary, journal };
  };
}

/** [start, end] of the subtask's worker run, from the project journal. */
export function workerWindow(journal: Event[], subtask: string): [number, number] {
  const start = journal.find((event) => event.type === 'worker_started' && event.subtask === subtask);
  const end = journal.find((event) => event.type === 'worker_finished' && event.subtask === subtask);
  if (!start || !end) throw new Error(`no worker run of ${subtask} in the journal`);
  return [Date.parse(start.at), Date.parse(end.at)];
}

export const indexOf = (events: Event[], predicate: (event: Event) => boolean) => {
  const index = events.findIndex(predicate);
  if (index === -1) throw new Error('event not found');
  return index;
};
