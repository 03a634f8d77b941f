/**
 * The demo task (examples/slugify) as end-to-end tests drive it with a scripted model: its repository as a
 * fresh git repository, the Meta-agent's replies as the model script writes them, the slug files, the
 * `--json` events.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';
import { assessmentReply, planReply, runWorkerReply } from './meta-replies.js';
import type { ScriptedModels } from './scripted-models.js';
import { assistantMessage, commandCall, type ScriptedReply } from './scripted-responses-server.js';
import { SLUG_JS, SLUG_TEST_JS, git, writeFileCommand } from './task-repo.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const DEMO_PRD = path.join(ROOT, 'examples', 'slugify', 'PRD.md');

/** The demo's repository as a fresh git repository, with `config` as its agent-runner.yaml. */
export function demoRepo(config: string): string {
  const { dir, remove } = createDemoRepo(config);
  onTestFinished(remove);
  return dir;
}

/** The same, outside a test (a file's shared repository): the caller removes it. */
export function createDemoRepo(config: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'ar-demo-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  cpSync(path.join(ROOT, 'examples', 'slugify', 'repo'), dir, { recursive: true });
  writeFileSync(path.join(dir, 'agent-runner.yaml'), config);
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@e', 'commit', '-q', '-m', 'base');
  return { dir, remove };
}

export function nextAction(
  workerType: string,
  reason: string,
  prompt: string,
  mode: 'exec' | 'resume' = 'exec',
): string {
  return runWorkerReply(prompt, { workerType, reason, mode, patterns: [] });
}

/** The Meta-agent's plan of the demo: one criterion, `npm test` passes. */
export function npmTestPlan(taskId: string): string {
  return [
    'type: plan_task',
    'version: 1',
    'payload:',
    `  task_id: ${taskId}`,
    '  acceptance_criteria:',
    '    - id: AC-1',
    '      description: slugify passes its tests (npm test).',
    '      type: test',
    '      critical: true',
    '      check:',
    '        kind: command',
    '        command: npm test',
  ].join('\n');
}

export function assessment(done: boolean, summary: string): string {
  return [
    'type: completion_assessment',
    'version: 1',
    'payload:',
    `  all_criteria_satisfied: ${done}`,
    `  summary: ${summary}`,
    '  by_criterion:',
    '    - id: AC-1',
    `      status: ${done ? 'passed' : 'failed'}`,
    `      comment: ${done ? 'npm test passed in the sandbox.' : 'npm test fails.'}`,
  ].join('\n');
}

export const SLUG_BROKEN = `exports.slugify = (text) => text.toLowerCase().split(' ').join('-');\n`;
export const SLUG_FIXED = `exports.slugify = (text) => text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join('-');\n`;
export const SLUG_TEST = [
  "const test = require('node:test');",
  "const assert = require('node:assert');",
  "const { slugify } = require('./slug.js');",
  "test('joins words', () => assert.strictEqual(slugify('Hello Big World'), 'hello-big-world'));",
  "test('separators', () => assert.strictEqual(slugify('C++ & Rust!'), 'c-rust'));",
  '',
].join('\n');

export const heredoc = (file: string, content: string) => `cat > ${file} <<'EOF'\n${content}EOF`;

/** The `--json` lines of a run. */
export function jsonEvents(stdout: string): { type: string; [key: string]: unknown }[] {
  return stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; [key: string]: unknown });
}

/** One codex turn: each command in a response of its own, then `message`. */
export function codexTurn(commands: string[], message: string): ScriptedReply[] {
  return [
    ...commands.map((command): ScriptedReply => ({ kind: 'output', items: [commandCall(command)] })),
    { kind: 'output', items: [assistantMessage(message)] },
  ];
}

/** The codex turn of the Node task repository (task-repo.ts): slug.js (`slug`) and its test written, committed. */
export function commitSlugTurn(slug = SLUG_JS, message = 'Add slugify'): ScriptedReply[] {
  return codexTurn(
    [
      `${writeFileCommand('slug.js', slug)}\n${writeFileCommand('slug.test.js', SLUG_TEST_JS)}`,
      `git add -A && git commit -q -m ${JSON.stringify(message)}`,
    ],
    'Committed slugify.',
  );
}

/** The criterion a follow-up on a finished slugify task adds. */
export const SLUG_DOC_CRITERION = {
  id: 'AC-3',
  description: 'SLUG.md explains slugify',
  check: { kind: 'command', command: 'grep -q slugify SLUG.md' },
};

/**
 * A follow-up on a finished slugify task (AC-1, AC-2) that adds SLUG_DOC_CRITERION: the Meta-agent plans it and
 * starts a new worker session (no earlier one is on a fresh runner), codex writes and commits SLUG.md, and the
 * assessment finds all three criteria hold.
 */
export function scriptSlugDocFollowup(models: ScriptedModels, id: string): void {
  models.chat.push(
    { reply: planReply(id, [SLUG_DOC_CRITERION]) },
    { reply: runWorkerReply('Write SLUG.md explaining slugify; commit.') },
    { reply: assessmentReply(true, ['AC-1', 'AC-2', 'AC-3'], 'All hold.') },
  );
  models.responses.enqueue(
    ...codexTurn(
      [
        writeFileCommand('SLUG.md', 'slugify: lower-case words joined with -\n'),
        'git add SLUG.md',
        'git commit -q -m "Document slugify"',
      ],
      'Documented.',
    ),
  );
}

/** The environment of a headless run against the scripted models, with `apiKey` (a test looks for it). */
export function scriptedRunEnv(
  models: ScriptedModels,
  apiKey: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    OPENAI_BASE_URL: models.chat.url,
    OPENAI_API_KEY: apiKey,
    AGENT_RUNNER_WORKER_BASE_URL: models.responses.baseUrl('127.0.0.1'),
    AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
    CI: 'true',
    ...extra,
  };
}

/** The summary object a `--json` run ends with (its last line). */
export function jsonSummary<T>(stdout: string): T {
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as T;
}
