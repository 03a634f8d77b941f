/**
 * A task whose Meta-agent uses two workers: codex implements (and leaves a test failing), Claude Code fixes
 * what the checks found. Real CLI, real git, real Docker, the real codex and claude binaries in one sandbox;
 * the models are scripted by agent-runner's own `--model-script` server, which speaks each worker's protocol
 * (Responses for codex, Anthropic Messages for claude, the Gemini API for gemini) behind the gateway. (The demo with
 * one of them as the only worker: tests/e2e/only-worker-*.test.ts.)
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import {
  ROOT,
  SLUG_BROKEN,
  SLUG_FIXED,
  SLUG_TEST,
  assessment,
  npmTestPlan,
  demoRepo,
  heredoc,
  jsonEvents,
  nextAction,
} from '../support/demo-task.js';
import { git } from '../support/task-repo.js';
import { noContainerLeft } from '../support/only-worker-demo.js';

const FORGED = 'FORGED-BY-CODEX';
const FORGED_PROJECT = 'FORGED-PROJECT-FILE-BY-CODEX';
const ACTIVE = 'MEMORY-ACTIVE-DECISION: slugs use hyphens only.';
const ARCHIVED = 'MEMORY-ARCHIVED-DECISION: slugs used underscores.';
const PROJECT_AGENTS = 'PROJECT-AGENTS-TEXT: run npm test before committing.';
const PROJECT_CLAUDE = 'PROJECT-CLAUDE-TEXT: keep functions small.';

/** The project's own instructions files and two memory bank entries (one archived), committed on main. */
function commitMemoryBank(repo: string): void {
  const entry = (title: string, status: string, body: string) =>
    `---\ntitle: ${title}\nstatus: ${status}\nsource: person\ncreated: 2026-11-01T00:00:00Z\n---\n\n${body}\n`;
  mkdirSync(path.join(repo, '.agent-runner', 'memory'), { recursive: true });
  writeFileSync(path.join(repo, '.agent-runner/memory/0001-hyphens.md'), entry('Hyphens', 'active', ACTIVE));
  writeFileSync(
    path.join(repo, '.agent-runner/memory/0002-underscores.md'),
    entry('Underscores', 'archived', ARCHIVED),
  );
  writeFileSync(path.join(repo, 'AGENTS.md'), `${PROJECT_AGENTS}\n`);
  writeFileSync(path.join(repo, 'CLAUDE.md'), `${PROJECT_CLAUDE}\n`);
  git(repo, 'add', '-A');
  git(
    repo,
    '-c',
    'user.name=t',
    '-c',
    'user.email=t@e',
    'commit',
    '-q',
    '-m',
    'Memory bank and project instructions',
  );
}

function script(taskId: string): string {
  const meta = [
    npmTestPlan(taskId),
    nextAction('codex', 'Implement slugify with its tests.', 'Create slug.js and slug.test.js; commit them.'),
    assessment(false, 'The separators test fails.'),
    nextAction(
      'claude',
      'The checks found a failing test; let claude fix it.',
      'Make npm test pass; commit.',
    ),
    assessment(true, 'npm test passes on the committed tree.'),
  ];
  const worker = [
    { run: `${heredoc('slug.js', SLUG_BROKEN)}\n${heredoc('slug.test.js', SLUG_TEST)}` },
    { run: "git add -A && git -c user.name=codex -c user.email=c@e commit -q -m 'Add slugify'" },
    // Claude's instructions file is in the same worker home, and the project's CLAUDE.md in the workspace: what
    // codex writes into either must not reach claude.
    {
      run: `mkdir -p /codex-home/claude && echo ${FORGED} > /codex-home/claude/CLAUDE.md && echo ${FORGED_PROJECT} >> CLAUDE.md`,
    },
    { message: 'Added slugify and its tests.' },
    { run: 'npm test 2>&1 | tail -n 3' },
    {
      run: `git checkout -- CLAUDE.md\n${heredoc('slug.js', SLUG_FIXED)}\ngit add slug.js && git -c user.name=claude -c user.email=c@e commit -q -m 'Fix separators'`,
    },
    { message: 'Fixed the separators; npm test passes.' },
  ];
  return JSON.stringify({ meta, worker });
}

describe('a task with two workers', () => {
  it('codex implements, claude fixes what the checks found, and the task ends COMPLETE with the DoD passed', async () => {
    const taskId = 'TWO-WORKERS';
    const repo = demoRepo('workers:\n  claude:\n    model: claude-scripted\n');
    commitMemoryBank(repo);
    const scriptFile = path.join(repo, '..', `${path.basename(repo)}-script.json`);
    const cassette = path.join(repo, '..', `${path.basename(repo)}-cassette.json`);
    writeFileSync(scriptFile, script(taskId));
    onTestFinished(() => rmSync(scriptFile, { force: true }));
    onTestFinished(() => rmSync(cassette, { force: true }));
    onTestFinished(() => noContainerLeft(taskId, repo));
    const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
    delete env.OPENAI_API_KEY;
    delete env.ANTHROPIC_API_KEY;
    const result = await runCliCaptured(
      [
        'run',
        '--prd',
        path.join(ROOT, 'examples', 'slugify', 'PRD.md'),
        '--task-id',
        taskId,
        '--single',
        '--json',
        '--model-script',
        scriptFile,
        '--record',
        cassette,
      ],
      { cwd: repo, env },
    );
    const events = jsonEvents(result.stdout);
    const summary = events.at(-1) as unknown as { state: string; exitCode: number; notePath: string };
    expect(summary.state, result.stderr).toBe('COMPLETE');
    expect(result.exitCode).toBe(0);

    const started = events.filter((event) => event.type === 'worker_started');
    expect(started.map((event) => [event.worker, event.model])).toEqual([
      ['codex', 'gpt-5.5'],
      ['claude', 'claude-scripted'],
    ]);
    const finished = events.filter((event) => event.type === 'worker_finished');
    expect(finished.map((event) => event.worker)).toEqual(['codex', 'claude']);
    for (const event of finished)
      expect((event.usage as { inputTokens: number }).inputTokens).toBeGreaterThan(0);
    // The DoD failed after codex's run and passed after claude's, on the tree the task ends with.
    const dods = events
      .filter((event) => event.type === 'dod')
      .map((event) => (event.dod as { status: string }).status);
    expect(dods).toEqual(['failed', 'passed']);
    expect(
      git(repo, 'log', '--format=%s', 'agent-runner/TWO-WORKERS').trim().split('\n').slice(0, 2),
    ).toEqual(['Fix separators', 'Add slugify']);

    // The memory bank: each worker's first request (as the CLI sent it) holds its native file as `memory preview
    // --worker` prints it: the project's own file as committed (once), then the active entry; and the prompt's
    // summary and list; never the archived entry, nor what codex wrote into claude's file or the project's.
    const { exchanges } = JSON.parse(readFileSync(cassette, 'utf8')) as {
      exchanges: { kind: string; index: number; path: string; request: unknown }[];
    };
    const workerRequests = exchanges.filter((exchange) => exchange.kind === 'worker');
    const firstOf = (route: RegExp) =>
      JSON.stringify(workerRequests.find((exchange) => route.test(exchange.path))?.request);
    const occurrences = (text: string, part: string) => text.split(part).length - 1;
    for (const [worker, route, project] of [
      ['codex', /responses/, PROJECT_AGENTS],
      ['claude', /messages/, PROJECT_CLAUDE],
    ] as const) {
      const preview = await runCliCaptured(['memory', 'preview', '--worker', worker, '--json'], {
        cwd: repo,
        env,
      });
      const view = JSON.parse(preview.stdout) as {
        section: string;
        instructionsFiles: { worker: string; text: string }[];
      };
      const merged = view.instructionsFiles[0]?.text ?? '';
      expect(merged.indexOf(project)).toBeGreaterThanOrEqual(0);
      expect(merged.indexOf(project)).toBeLessThan(merged.indexOf(ACTIVE));
      const request = firstOf(route);
      expect(request).toContain(JSON.stringify(merged.trim()).slice(1, -1));
      expect(occurrences(request, project)).toBe(1);
      expect(request).toContain(JSON.stringify(view.section).slice(1, -1));
      expect(request).toContain('.agent-runner/memory/0001-hyphens.md');
      expect(request).not.toContain(ARCHIVED);
    }
    expect(firstOf(/messages/)).not.toContain(FORGED);
    expect(firstOf(/messages/)).not.toContain(FORGED_PROJECT);
    // The instructions files live in the worker home: nothing of them is on the branch, whose own files are as they were.
    expect(git(repo, 'show', 'agent-runner/TWO-WORKERS:AGENTS.md')).toBe(PROJECT_AGENTS);
    expect(git(repo, 'show', 'agent-runner/TWO-WORKERS:CLAUDE.md')).toBe(PROJECT_CLAUDE);
    expect(
      git(repo, 'diff', '--name-only', 'main', 'agent-runner/TWO-WORKERS').trim().split('\n').sort(),
    ).toEqual(['slug.js', 'slug.test.js']);

    const note = readFileSync(summary.notePath, 'utf8');
    expect(note).toMatch(
      /\| Worker \| codex \(gpt-5\.5\); the Meta-agent could also choose claude \(claude-scripted\) \|/,
    );
    expect(note).toMatch(/### Run 1 \(codex exec with gpt-5\.5, [^)]*exit 0, \d+ tokens\)/);
    expect(note).toMatch(/### Run 2 \(claude exec with claude-scripted, [^)]*exit 0, \d+ tokens\)/);
    expect(note).toMatch(/\*\*State\*\* \| \*\*COMPLETE\*\*/);
  }, 300_000);

  it('a configured worker without its key stops the run before anything starts (exit 2, nothing created)', async () => {
    const repo = demoRepo('workers:\n  claude: {}\n');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CI: 'true',
      OPENAI_API_KEY: 'sk-test',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    };
    delete env.ANTHROPIC_API_KEY;
    const before = git(repo, 'for-each-ref').trim();
    const result = await runCliCaptured(
      ['run', '--prd', path.join(ROOT, 'examples', 'slugify', 'PRD.md'), '--task-id', 'NO-KEY'],
      { cwd: repo, env },
    );
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(
      'The claude worker has no key: ANTHROPIC_API_KEY is not set (https://api.anthropic.com needs one). Export ANTHROPIC_API_KEY=<your key>, or set workers.claude.apiKeyEnv to the variable that holds it.',
    );
    expect(git(repo, 'for-each-ref').trim()).toBe(before);
    await noContainerLeft('NO-KEY', repo);
  }, 120_000);
});
