/**
 * The pull/merge request body built from a finished task's records: its sections, escaping of what a worker or
 * a model wrote, redaction, and the bound under GitHub's 65,536 characters.
 */
import { marked } from 'marked';
import { describe, expect, it } from 'vitest';
import { BODY_LIMIT, changeRequestBody, changeRequestTitle } from '../../src/deliver/change-request-body.js';
import { readTaskJournal } from '../../src/lifecycle/task-journal-state.js';
import { Redaction } from '../../src/notes/redact.js';
import { createFinishedTask } from '../support/finished-task.js';

async function evidence(options: Parameters<typeof createFinishedTask>[0] = {}) {
  const task = await createFinishedTask(options);
  const journal = readTaskJournal(task.runDir, task.taskId);
  if (!journal?.finished) throw new Error('no finished task');
  return { summary: journal.finished, runs: journal.runs, baseline: journal.baseline };
}

describe('change request body', () => {
  it('holds the criteria, the DoD with the baseline, commits and diff stat, runs, usage and how to verify', async () => {
    const records = await evidence();
    const body = changeRequestBody(records, new Redaction().redact);
    expect(body).toContain('**State: COMPLETE**');
    expect(body).toMatch(/## Acceptance criteria\n\n\| \| Criterion \| Check \| Result \| Assessment \|/);
    expect(body).toContain('✅ passed: checked |');
    expect(body).toContain('## Definition of Done');
    expect(body).toContain('passed on the base too');
    expect(body).toContain('## Commits and diff stat');
    expect(body).toContain('Add slugify');
    expect(body).toContain('1 file changed, 1 insertion(+)');
    expect(body).toContain('## Worker runs');
    expect(body).toContain('Usage: Meta-agent 3,300 tokens, $0.0020 in 3 calls');
    expect(body).toContain('## How to verify');
    expect(body).toContain(`agent-runner verify ${records.summary.branch}`);
  });

  it('escapes what the worker and the model wrote: a pipe cannot break the table, markup stays text', async () => {
    const records = await evidence();
    const criterion = records.summary.criteria[0];
    if (!criterion) throw new Error('no criterion');
    criterion.description = 'breaks | the table <img src=x onerror=alert(1)> [link](http://evil.test)';
    const body = changeRequestBody(records, new Redaction().redact);
    const row = body.split('\n').find((line) => line.includes('breaks')) ?? '';
    expect(row).not.toContain('breaks | the');
    expect(row).not.toContain('<img');
    expect(row).not.toContain('[link](http');
  });

  it('redacts secrets in the title and the body', async () => {
    const secret = 'sk-proj-abcdefghijklmnop0123456789';
    const records = await evidence({ title: `Title ${secret}` });
    records.summary.reason = `reason with ${secret}`;
    const redaction = new Redaction([secret]);
    expect(changeRequestTitle(records.summary, redaction.redact)).toBe('Title [REDACTED]');
    expect(changeRequestBody(records, redaction.redact)).not.toContain(secret);
  });

  it('stays under GitHub limit: the longest section is cut, and says so; the verify section stays whole', async () => {
    const records = await evidence();
    const facts = records.runs[0]?.facts;
    if (!facts) throw new Error('no facts');
    facts.diffStat = Array.from({ length: 5_000 }, (_, index) => ` src/file-${index}.js | 1 +`).join('\n');
    const extra = [`## Subtasks\n\n${'- a subtask line that is rather long, repeated\n'.repeat(3_000)}`];
    const body = changeRequestBody(records, new Redaction().redact, extra);
    expect(body.length).toBeLessThanOrEqual(BODY_LIMIT);
    expect(body).toContain('[cut:');
    expect(body).toContain('## Acceptance criteria');
    expect(body.trimEnd().endsWith('in the repository agent-runner ran in.')).toBe(true);
  });
});

describe('change request body: what the worker wrote reaches the forge as text', () => {
  const ATTACKS = [
    'ping @octocat and @acme/security-team, mail me@evil.test',
    'fixes #123, GH-45, acme/app#7, acme/app@deadbeefcafe1234, deadbeefcafe1234567',
    'GitLab: !12 %v1.0 ~bug $99 &3',
    'see (https://evil.test/x) or www.evil.test',
    '``` `` ` </code> <img src=x onerror=alert(1)> ![x](https://evil.test/i.png) [x](javascript:alert(1))',
    'nul \u0000 and a lone \ud800 surrogate',
  ];

  /** What a reader of the rendered body sees as text outside code: the forge's autolinks are read from it. */
  function renderedText(markdown: string): { html: string; text: string } {
    const html = marked.parse(markdown, { gfm: true, async: false });
    const text = html
      .replace(/<code>[\s\S]*?<\/code>/g, ' ')
      .replace(/<[^>]+>/g, ' ')
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&');
    return { html, text };
  }

  it('renders no link, image or HTML, and no mention or reference a forge would make of it', async () => {
    const records = await evidence();
    const criterion = records.summary.criteria[0];
    const facts = records.runs[0]?.facts;
    if (!criterion || !facts) throw new Error('no criterion or facts');
    records.summary.reason = ATTACKS.join(' ');
    criterion.description = ATTACKS.join(' ');
    criterion.comment = ATTACKS[0] ?? '';
    facts.commits = ATTACKS.map((subject, index) => ({ sha: `${index}`.repeat(40), subject }));
    const body = changeRequestBody(records, new Redaction().redact);
    const { html, text } = renderedText(body);
    // The probe sees what it looks for when the text is not made inert.
    const raw = renderedText(ATTACKS.join('\n\n'));
    expect(raw.html).toMatch(/<a |<img /);
    expect(raw.text).toMatch(/@octocat/);
    expect(html).not.toMatch(/<a |<img |<script|<[a-z]+[^>]*onerror=/);
    for (const pattern of [
      /@[A-Za-z0-9]/, // mentions, teams, emails
      /#\d/, // issues, owner/repo#1
      /\bGH-\d/i,
      /![0-9]/, // GitLab merge requests
      /[%~$&][A-Za-z0-9"]/, // milestones, labels, snippets, epics
      /[0-9a-f]{7,}/i, // commit hashes
      /https?:\/\/|www\./i, // autolinks
    ])
      // The runner's own cost figures ($0.0123) are the only `$` it writes itself.
      expect(text.replace(/\$\d+\.\d{4}\b/g, ''), String(pattern)).not.toMatch(pattern);
    expect(body).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(body).not.toContain('\u0000');
    // The words are all there for a reader.
    expect(text.replace(/\u2060/g, '')).toContain('ping @octocat');
  });

  it('the title too, and a secret is redacted before it is made inert', async () => {
    const secret = 'ghp_abcdef0123456789abcdef0123456789ab';
    const records = await evidence({ title: `Fix #12 for @octocat ${secret}` });
    const title = changeRequestTitle(records.summary, new Redaction([secret]).redact);
    expect(title).not.toMatch(/#\d|@o/);
    expect(title).toContain('[REDACTED]');
    records.summary.reason = `leaked ${secret}`;
    expect(changeRequestBody(records, new Redaction([secret]).redact)).not.toMatch(/abcdef0/);
  });
});
