/**
 * The board's paging in a real headless browser (Chromium, playwright-core) against the real API over the
 * real board of 130 tasks in a state directory (no sandbox: the board needs none): the page loads the first
 * page (50 rows), "More" adds the next, the last page hides it, and a state filter shows only that state's
 * tasks, paged the same way. The page's script is web/src/app.ts bundled by esbuild as `npm run build` does.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { ROOT } from '../support/demo-task.js';
import { manyTaskId, writeManyTasks } from '../support/many-tasks.js';

const token = 'board-paging-token';
const COUNT = 130;
let dir = '';
let browser: Browser;
let server: ServerType;
let url = '';

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ar-board-paging-'));
  writeManyTasks(dir, COUNT);
  const redaction = new Redaction();
  const api = createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
  });
  const bundle = await build({
    entryPoints: [path.join(ROOT, 'web', 'src', 'app.ts')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'warning',
  });
  const script = bundle.outputFiles[0]?.text ?? '';
  server = serve({
    // The page's script from the sources (dist/ may be stale); everything else is the server's own.
    fetch: (request) =>
      new URL(request.url).pathname === '/app.js'
        ? new Response(script, { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
        : api.fetch(request),
    port: 0,
    hostname: '127.0.0.1',
  });
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const executablePath = execFileSync('bash', [path.join(ROOT, 'scripts', 'ensure-chromium.sh')], {
    encoding: 'utf8',
  }).trim();
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const newestFirst = (count: number) =>
  Array.from({ length: count }, (_, index) => manyTaskId(COUNT - 1 - index));

it('loads the first page, adds the next with More, and filters by state', async () => {
  const page = await browser.newPage();
  await page.goto(`${url}/?token=${token}#/`);
  const rows = page.locator('#board tbody tr');
  const shown = () => rows.evaluateAll((all) => all.map((row) => row.getAttribute('data-task')));
  await expect.poll(shown).toEqual(newestFirst(50));
  const more = page.locator('#board-more');
  await expect.poll(() => more.isVisible()).toBe(true);

  await more.click();
  await expect.poll(shown).toEqual(newestFirst(100));
  await more.click();
  await expect.poll(shown).toEqual(newestFirst(COUNT));
  await expect.poll(() => more.isVisible()).toBe(false);
  // A refresh a second later asks for the three pages again: the rows stay.
  await page.waitForTimeout(1_500);
  expect(await shown()).toEqual(newestFirst(COUNT));

  await page.selectOption('#filter-state', 'FAILED');
  const failed = newestFirst(COUNT).filter((taskId) => Number(taskId.slice(2)) % 4 === 1);
  await expect.poll(shown).toEqual(failed.slice(0, 50));
  const states = await page
    .locator('#board tbody .state')
    .evaluateAll((all) => all.map((badge) => badge.getAttribute('data-state')));
  expect(new Set(states)).toEqual(new Set(['FAILED']));
  expect(await more.isVisible()).toBe(false);
  await page.close();
});
