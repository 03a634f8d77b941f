/**
 * The web view in a real browser: headless Chromium from Debian's packages (scripts/ensure-chromium.sh),
 * driven by playwright-core, against the real server with the real composition behind it (real git, Docker
 * and codex, agent-runner's scripted model). A task runs: its page shows the states changing live and its
 * commands arriving with their exit codes; its question appears as a form, is answered there, and the task
 * goes on to COMPLETE; a second task started from the board's form appears on the board. The screenshots of
 * the task page and the board are saved in docs/ (the latest run's). The PRD and the scripted models are files
 * of the served repository (the API reads no other).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { decisionReply } from '../support/meta-replies.js';
import { parse, stringify } from 'yaml';
import { ServeClient, readServeInfo, type ServeInfo } from '../../src/serve/api-client.js';
import { ROOT } from '../support/demo-task.js';
import { filesUnder } from '../support/files-under.js';
import { DEMO_SCRIPT, SERVED_PRD, serveDemoRepo, type ServedRepo } from '../support/serve-repo.js';
import { taskContainers } from '../support/task-containers.js';

const QUESTION = 'Should slugify keep digits?';
const demo = parse(readFileSync(DEMO_SCRIPT, 'utf8')) as { meta: string[]; worker: Record<string, string>[] };
let repo = '';
let served: ServedRepo;
let server: ServedRepo['server'];
let browser: Browser;

beforeAll(async () => {
  const executablePath = execFileSync('bash', [path.join(ROOT, 'scripts', 'ensure-chromium.sh')], {
    encoding: 'utf8',
  }).trim();
  // As root, Chromium's own sandbox cannot start; the page is ours, served from this machine.
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
  served = await serveDemoRepo({
    'specs/ask.yaml': askingScript(),
    // A worker that hangs (its server dies meanwhile), then the rest of the demo for the task's resume.
    'specs/hang.yaml': stringify({ meta: demo.meta.slice(0, 2), worker: [{ run: 'sleep 600' }] }),
    'specs/finish.yaml': stringify({ meta: demo.meta.slice(1), worker: demo.worker }),
  });
  ({ repo, server } = served);
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
});

/** Markup a hostile worker writes, hoping a page runs it. */
const INJECTED = '<img src=x onerror="window.injected=1"><script>window.injected=2</script>';

/**
 * The demo's script with an `ask_human` decision after the plan, and a worker whose final message (shown in
 * the note and the page) carries markup.
 */
function askingScript(): string {
  const worker = demo.worker.map((step) => ({ ...step }));
  const last = worker.at(-1);
  if (last?.message !== undefined) last.message = `${last.message} ${INJECTED}`;
  const ask = decisionReply('ask_human', 'The PRD does not say what happens to digits.', QUESTION);
  return stringify({ ...demo, worker, meta: [demo.meta[0], ask, ...demo.meta.slice(1)] });
}

describe('the web view', () => {
  it('shows a task live, takes its answer, and starts another from the board', async () => {
    // A person of the team: an operator token made with the server's own (admin) token, used from here on.
    const admin = new ServeClient(server.info.url, server.info.token);
    const { token: alice } = await admin.request<{ token: string }>('POST', '/api/tokens', {
      name: 'alice',
      role: 'operator',
    });
    const client = new ServeClient(server.info.url, alice);
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: SERVED_PRD,
      modelScript: 'specs/ask.yaml',
      taskId: 'WEB-ASK',
    });
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`${server.info.url}/?token=${alice}#/task/${taskId}`);
    // The token left the address bar at once.
    expect(page.url()).not.toContain('token=');

    // The question shows as a form while the states so far are on the timeline.
    await page.locator('#question').waitFor({ timeout: 120_000 });
    expect(await page.locator('#question').textContent()).toContain(QUESTION);
    const before = await page.locator('#timeline li').count();
    expect(before).toBeGreaterThan(0);
    await page.locator('#question input[name=answer]').fill('Yes, keep digits.');
    await page.locator('#question button').click();

    // The worker's commands arrive with their exit codes; the states go on, live, to COMPLETE.
    await page.locator('li.command .exit').first().waitFor({ timeout: 180_000 });
    await page.locator('#task-header .state[data-state=COMPLETE]').waitFor({ timeout: 180_000 });
    expect(await page.locator('#timeline li').count()).toBeGreaterThan(before);
    expect(await page.locator('#timeline li[data-state=COMPLETE]').count()).toBe(1);
    expect(await page.locator('li.command').first().textContent()).toContain('cat > slug.js');
    // Who started it and who answered its question (from the page), as the server audited them.
    await page.locator('#audit li[data-action="task.answer"][data-actor=alice]').waitFor({ timeout: 10_000 });
    const who = await page.locator('#audit li').allTextContents();
    expect(who[0]).toMatch(/^Started by alice \(operator\) from 127\.0\.0\.1 at \d\d:\d\d:\d\d$/);
    expect(who[1]).toMatch(/^Answered by alice \(operator\) from 127\.0\.0\.1 at /);
    // The state is journaled a moment before the summary that holds the criteria's evidence: wait for it.
    await page
      .locator('#criteria li[data-criterion=AC-1]', { hasText: 'passed' })
      .waitFor({ timeout: 10_000 });
    // The note is rendered (its table, its headings), the worker's markup in it shown as text and never run.
    await page.locator('#note table').first().filter({ hasText: 'COMPLETE' }).waitFor();
    expect(await page.locator('#note h2').allTextContents()).toEqual(
      expect.arrayContaining(['Decision', 'Acceptance criteria', 'Pick up from here']),
    );
    expect(await page.locator('#note').textContent()).toContain('<img src=x onerror=');
    expect(await page.locator('#note img, #note script').count()).toBe(0);
    expect(
      await page.evaluate(() => (globalThis as unknown as { injected?: number }).injected),
    ).toBeUndefined();
    await page.screenshot({ path: path.join(ROOT, 'docs', 'web-task.png'), fullPage: true });

    // The board: this task, and a second one started from its form (it fails at once: no model key here).
    await page.goto(`${server.info.url}/#/`);
    await page.locator(`#board tr[data-task=${taskId}] .state[data-state=COMPLETE]`).waitFor();
    await page
      .locator('#start-form textarea')
      .fill('# Add greet\n\nAdd `greet(name)` in greet.js returning "Hello, <name>!".\n');
    await page.locator('#start-form button').click();
    await page.waitForURL(/#\/task\/add-greet-[0-9a-f]{6}$/);
    const second = decodeURIComponent(page.url().split('#/task/')[1] ?? '');
    await page.goto(`${server.info.url}/#/`);
    await page.locator(`#board tr[data-task="${second}"]`).waitFor();
    await page.screenshot({ path: path.join(ROOT, 'docs', 'web-board.png'), fullPage: true });
    expect(problems).toEqual([]);
    expect(await taskContainers(taskId, repo)).toEqual([]);
    // The operator's token is in no file the task and the server wrote (journals, note, audit log, logs);
    // the probe first finds it planted there. Its secret is what follows `art_<id>_`.
    const secret = alice.slice(17);
    const stateDir = path.join(repo, '.agent-runner');
    const holding = () =>
      filesUnder(stateDir, 'latin1')
        .filter(({ text }) => text.includes(secret))
        .map(({ file }) => file);
    const planted = path.join(stateDir, 'runs', taskId, 'planted.txt');
    writeFileSync(planted, `x${secret}x`);
    expect(holding()).toEqual([planted]);
    rmSync(planted);
    expect(holding()).toEqual([]);
  }, 600_000);
});

describe('a split task', () => {
  it('shows its subtask graph: each subtask with its state and what it waits for', async () => {
    // A project as `run` journals it when the planner split the PRD: b waits for a; a is merged, b running.
    const runDir = path.join(repo, '.agent-runner', 'runs', 'WEB-SPLIT');
    mkdirSync(runDir, { recursive: true });
    const subtask = (id: string, blockedBy: string[]) => ({
      id,
      title: `Part ${id}`,
      prd: `# Part ${id}`,
      plan: { title: `Part ${id}`, acceptanceCriteria: [] },
      writeScope: [`src/${id}/**`],
      readScope: [],
      blockedBy,
    });
    const at = '2026-01-01T00:00:00.000Z';
    const lines = [
      {
        type: 'project_started',
        taskId: 'WEB-SPLIT',
        branch: 'agent-runner/WEB-SPLIT',
        baseSha: 'a'.repeat(40),
        max: 2,
        subtasks: [subtask('a', []), subtask('b', ['a'])],
        prd: '# Split',
        prdPath: 'PRD.md',
        at,
      },
      { type: 'subtask_state', subtask: 'a', state: 'merged', attempt: 1, taskId: 'WEB-SPLIT--a', at },
      { type: 'subtask_state', subtask: 'b', state: 'running', attempt: 1, taskId: 'WEB-SPLIT--b', at },
    ];
    writeFileSync(
      path.join(runDir, 'project.jsonl'),
      lines.map((line) => `${JSON.stringify(line)}\n`).join(''),
    );
    const page = await browser.newPage();
    await page.goto(`${server.info.url}/?token=${server.info.token}#/task/WEB-SPLIT`);
    await page.locator('#subtasks li[data-subtask=b]').waitFor();
    expect(await page.locator('#subtasks li[data-subtask=a]').textContent()).toMatch(/^a Part a merged$/);
    expect(await page.locator('#subtasks li[data-subtask=b]').textContent()).toMatch(
      /^b Part b running after a$/,
    );
    expect(await page.locator('#subtasks li[data-subtask=b] a').getAttribute('href')).toBe(
      '#/task/WEB-SPLIT--b',
    );
    await page.close();
  }, 120_000);
});

/** A server of its own process (as `serve` runs), in the demo repository; resolves once it listens. */
async function serverProcess(args: string[]): Promise<{ child: ChildProcess; info: ServeInfo }> {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.OPENAI_API_KEY;
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'bin', 'agent-runner.js'), 'serve', '--port', '0', ...args],
    {
      cwd: repo,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  for (let tries = 0; tries < 200; tries += 1) {
    const info = await readServeInfo(repo);
    if (info !== null && info.pid === child.pid) return { child, info };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the server did not start: ${stderr}`);
}

describe('a server that dies mid-task', () => {
  it('its task shows as stale on the next server, and is resumed from the page to COMPLETE', async () => {
    const first = await serverProcess([]);
    const client = new ServeClient(first.info.url, first.info.token);
    const { taskId } = await client.request<{ taskId: string }>('POST', '/api/tasks', {
      prdPath: SERVED_PRD,
      modelScript: 'specs/hang.yaml',
      taskId: 'WEB-RESTART',
    });
    for await (const message of client.events(taskId)) {
      const event = JSON.parse(message.data) as {
        type?: string;
        event?: { kind?: string; command?: string };
      };
      if (event.event?.kind === 'command_started' && event.event.command?.includes('sleep 600')) break;
    }
    // The server dies at once, its task with it (no note, no stop): as a crash or a killed terminal would.
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');

    const second = await serverProcess(['--model-script', 'specs/finish.yaml']);
    try {
      const again = new ServeClient(second.info.url, second.info.token);
      expect(await again.request('GET', `/api/tasks/${taskId}`)).toMatchObject({
        status: 'stale',
        served: false,
      });
      // A viewer's page of the stale task offers no resume (the admin's, below, does), and its board no start
      // form but a read-only line.
      const { token: bob } = await again.request<{ token: string }>('POST', '/api/tokens', {
        name: 'bob',
        role: 'viewer',
      });
      const viewer = await browser.newPage();
      await viewer.goto(`${second.info.url}/?token=${bob}#/task/${taskId}`);
      await viewer.locator('#task-header .state[data-state]').first().waitFor();
      await viewer.locator('#timeline li').first().waitFor();
      expect(await viewer.locator('#resume-task, #stop-task, form').count()).toBe(0);
      await viewer.goto(`${second.info.url}/#/`);
      await viewer.locator(`#board tr[data-task="${taskId}"]`).waitFor();
      expect(await viewer.locator('#read-only').textContent()).toContain('bob is a viewer');
      expect(await viewer.locator('#start-form').count()).toBe(0);
      await viewer.close();

      const page = await browser.newPage();
      await page.goto(`${second.info.url}/?token=${second.info.token}#/task/${taskId}`);
      await page.locator('#resume-task').click();
      expect(await page.locator('#read-only').count()).toBe(0);
      await page.locator('#task-header .state[data-state=COMPLETE]').waitFor({ timeout: 240_000 });
      await page.locator('#diff').filter({ hasText: 'slug.js' }).waitFor();
      // The first server's start and this one's resume (from the page, with its own token: the admin `server`).
      await page.locator('#audit li[data-action="task.resume"]').waitFor({ timeout: 10_000 });
      expect(await page.locator('#audit li').allTextContents()).toEqual([
        expect.stringMatching(/^Started by server \(admin\) from 127\.0\.0\.1/),
        expect.stringMatching(/^Resumed by server \(admin\) from 127\.0\.0\.1/),
      ]);
      await page.close();
      // The state is journaled before the sandbox is taken down: the container goes within moments of it.
      await vi.waitFor(async () => expect(await taskContainers(taskId, repo)).toEqual([]), {
        timeout: 30_000,
        interval: 500,
      });
    } finally {
      second.child.kill('SIGTERM');
      await once(second.child, 'exit');
    }
  }, 600_000);
});
