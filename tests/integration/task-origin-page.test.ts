/**
 * A task's page shows where the task came from and its follow-ups, in a real headless browser (Chromium,
 * playwright-core) against the real API over a real repository whose task journal holds the server's audit
 * events (written through the board's own sink, as the webhook routes write them) and a follow-up. The forge is
 * configured as a GitHub Enterprise at https://github.test: an origin on that host over https is a link; one on
 * another host, or over plain http, is text. The follow-up's instruction (a reviewer's words: forge text) carries
 * markup and links, and shows as text: no element of it reaches the page. The script is web/src/app.ts bundled
 * by esbuild as `npm run build` does.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { expect, it, onTestFinished } from 'vitest';
import { createApp } from '../../src/app.js';
import { webhookOptions } from '../../src/cli/serve-webhooks.js';
import { validateConfig } from '../../src/config/load.js';
import { Redaction } from '../../src/notes/redact.js';
import { createApi } from '../../src/serve/http-api.js';
import { TaskBoard } from '../../src/serve/task-board.js';
import { createFinishedTask, finishAgainComplete } from '../support/finished-task.js';
import { launchChromium, pageScript, servePage } from '../support/page-server.js';

const TOKEN = 'origin-page-server-token';
const TASK = 'issue-7-abc123';
const ISSUE = 'https://github.test/acme/app/issues/7';
const REVIEW = 'https://github.test/acme/app/pull/1#pullrequestreview-80';
const ELSEWHERE = 'https://evil.example/acme/app/issues/7';
const PLAIN = 'http://github.test/acme/app/issues/8';
const INSTRUCTION =
  '@agent-runner drop punctuation <img id="planted" src=x> [see](https://evil.example/md) https://evil.example/bare';

const links = (page: Page, selector: string) =>
  page.locator(selector).evaluateAll((all) => all.map((link) => link.getAttribute('href')));

it('shows the issue it came from as a link, other origins as text, and the follow-up’s words as text', async () => {
  // The repository is removed when the test ends (createTempRepo).
  const task = await createFinishedTask({ taskId: TASK });
  const redaction = new Redaction();
  const env = { PATH: process.env.PATH };
  const board = new TaskBoard(task.repo.root, createApp(env, {}, redaction), env);
  const config = validateConfig([
    {
      source: 'test',
      values: {
        forge: { webhookSecret: 'origin-page-webhook-secret-0123' },
        deliver: { forge: 'github', apiUrl: 'https://github.test/api/v3' },
      },
    },
  ]);
  const webhooks = await webhookOptions(config, task.repo.root, { env, redaction }, board, null);
  expect(webhooks?.forgeWeb).toBe('https://github.test');
  // The audit events as the webhook routes journal them (the board's sink), and two no server writes.
  const actor = { name: 'github:maya', role: 'operator' as const };
  const audit = (action: 'webhook.task' | 'webhook.followup', origin: string, at: string) =>
    board.recordAudit(TASK, { actor, action, taskId: TASK, origin, from: '203.0.113.9', status: 202 }, at);
  audit('webhook.task', ISSUE, '2026-11-28T10:00:00.000Z');
  audit('webhook.followup', REVIEW, '2026-11-28T11:00:00.000Z');
  audit('webhook.followup', ELSEWHERE, '2026-11-28T11:01:00.000Z');
  audit('webhook.followup', PLAIN, '2026-11-28T11:02:00.000Z');
  // Follow-up 1 with the reviewer's words, ended COMPLETE.
  const usage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0, costUsd: 0 };
  const followup = {
    type: 'followup_started',
    number: 1,
    instruction: INSTRUCTION,
    fromSha: task.head,
    before: [],
    earlier: { runs: 1, metaCalls: 3, usage: { meta: usage, worker: usage, total: usage } },
    at: '2026-11-28T11:03:04.000Z',
  };
  // After it, the task ends COMPLETE again (finishAgainComplete reads the summary of the journal's last line).
  const journal = path.join(task.runDir, 'events.jsonl');
  const finished = readFileSync(journal, 'utf8')
    .trim()
    .split('\n')
    .find((line) => line.includes('"task_finished"'));
  appendFileSync(journal, `${JSON.stringify(followup)}\n${finished}\n`);
  finishAgainComplete(task, task.addCommit('Drop punctuation'));
  const api = createApi(board, { token: TOKEN, redaction, ...(webhooks ? { webhooks } : {}) });
  const served = await servePage(api, await pageScript());
  onTestFinished(served.close);
  const browser = await launchChromium();
  onTestFinished(() => browser.close());

  const page = await browser.newPage();
  await page.goto(`${served.url}/?token=${TOKEN}#/task/${TASK}`);
  await expect.poll(() => page.locator('#audit li').count()).toBe(4);
  // The probe sees links on the forge's host (it can see what it looks for) and none elsewhere.
  expect(await links(page, '#audit a.origin')).toEqual([ISSUE, REVIEW]);
  expect(await page.locator('#audit span.origin').allTextContents()).toEqual([ELSEWHERE, PLAIN]);
  expect(await page.locator('a[href*="evil.example"], a[href^="http:"]').count()).toBe(0);
  expect(await page.locator('#audit li[data-action="webhook.followup"]').count()).toBe(3);

  await expect.poll(() => page.locator('#origin').count()).toBe(1);
  expect(await links(page, '#origin a.origin')).toEqual([ISSUE]);
  expect(await page.locator('#origin').textContent()).toBe(`From the forge: ${ISSUE} (asked by github:maya)`);

  // The follow-up: its number, end, and the reviewer's words as text, nothing of their markup as elements.
  const item = page.locator('#followups li[data-followup="1"]');
  expect(await item.textContent()).toContain('Follow-up 1 COMPLETE, started at 11:03:04');
  expect(await item.locator('.instruction').textContent()).toBe(INSTRUCTION);
  expect(await page.locator('#planted, #followups img, #followups a').count()).toBe(0);
  await page.close();
});
