/**
 * The board's paging in a real headless browser (Chromium, playwright-core) against the real API over the
 * real board of 130 tasks in a state directory (no sandbox: the board needs none): the page loads the first
 * page (50 rows), "More" adds the next, the last page hides it, and a state filter shows only that state's
 * tasks, paged the same way. The page's script is web/src/app.ts bundled by esbuild as `npm run build` does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { manyTaskId, writeManyTasks } from '../support/many-tasks.js';
import { launchChromium, pageScript, servePage } from '../support/page-server.js';

const token = 'board-paging-token';
const COUNT = 130;
let dir = '';
let browser: Browser;
let served: Awaited<ReturnType<typeof servePage>> | undefined;
let url = '';

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'ar-board-paging-'));
  writeManyTasks(dir, COUNT);
  const redaction = new Redaction();
  const api = createApi(new TaskBoard(dir, createApp(process.env, {}, redaction), process.env), {
    token,
    redaction,
  });
  served = await servePage(api, await pageScript());
  url = served.url;
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
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
