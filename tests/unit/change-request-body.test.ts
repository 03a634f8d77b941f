/**
 * The pull/merge request body built from a finished task's records: its sections, escaping of what a worker or
 * a model wrote, redaction, and the bound under GitHub's 65,536 characters.
 */
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
