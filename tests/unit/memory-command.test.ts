import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliCaptured } from '../support/cli.js';
import { createTempRepo } from '../support/git-repo.js';

describe('agent-runner memory', () => {
  it('adds, lists, archives and previews entries; writes files for the person unless --commit', async () => {
    const repo = await createTempRepo();
    const head = await repo.commit('base', { 'README.md': 'hi\n' });
    const cli = (...argv: string[]) => runCliCaptured(['memory', ...argv], { cwd: repo.root, env: {} });

    const added = await cli('add', 'Queue on PostgreSQL', '--text', 'Jobs go through pg-boss.');
    expect(added.exitCode).toBe(0);
    expect(added.stdout.trim()).toBe('.agent-runner/memory/0001-queue-on-postgresql.md (not committed)');
    expect(repo.git('rev-parse', 'HEAD').trim()).toBe(head);
    const text = await readFile(
      path.join(repo.root, '.agent-runner/memory/0001-queue-on-postgresql.md'),
      'utf8',
    );
    expect(text).toMatch(
      /^---\ntitle: Queue on PostgreSQL\nstatus: active\nsource: person\ncreated: .+\n---\n\nJobs go through pg-boss\.\n$/,
    );

    let preview = await cli('preview', '--worker', 'codex', '--json');
    expect(JSON.parse(preview.stdout)).toMatchObject({
      active: 0,
      uncommitted: ['.agent-runner/memory/0001-queue-on-postgresql.md'],
      instructionsFiles: [{ worker: 'codex', path: '/codex-home/AGENTS.md' }],
    });

    expect((await cli('add', 'Tabs', '--text', 'Indent with tabs.', '--commit')).exitCode).toBe(0);
    expect(repo.git('show', '--name-only', '--format=%s', 'HEAD').trim()).toBe(
      'Memory: Tabs\n\n.agent-runner/memory/0002-tabs.md',
    );
    preview = await cli('preview', '--worker', 'claude', '--json');
    const view = JSON.parse(preview.stdout) as { active: number; instructions: string; section: string };
    expect(view.active).toBe(1);
    expect(view.instructions).toContain('Indent with tabs.');
    expect(view.section).toContain('.agent-runner/memory/0002-tabs.md');

    expect((await cli('archive', '2', '--commit')).exitCode).toBe(0);
    const listed = await cli('list', '--json');
    expect(
      (JSON.parse(listed.stdout) as { entries: { id: string; status: string }[] }).entries.map((entry) => [
        entry.id,
        entry.status,
      ]),
    ).toEqual([
      ['0001-queue-on-postgresql', 'active'],
      ['0002-tabs', 'archived'],
    ]);
    expect((await cli('list', '--status', 'archived')).stdout).toMatch(/^0002-tabs {2}archived {2}Tabs/);
    expect(JSON.parse((await cli('preview', '--json')).stdout)).toMatchObject({
      active: 0,
      archived: 1,
      instructions: '',
    });
    expect((await cli('show', '1')).stdout).toContain('Jobs go through pg-boss.');
  });

  it.each([
    [['add', 'T'], /exactly one of --text/],
    [['add', 'T', '--text', 'a', '--file', 'f'], /exactly one of --text/],
    [['show', '7'], /No memory entry 7/],
    [['list', '--status', 'maybe'], /--status maybe: give one of active, archived/],
    [['preview', '--worker', 'aider'], /--worker aider: give one of codex/],
  ])('refuses %j with exit 2 and the fix, changing nothing', async (argv, message) => {
    const repo = await createTempRepo();
    await repo.commit('base', { 'README.md': 'hi\n' });
    const result = await runCliCaptured(['memory', ...argv], { cwd: repo.root, env: {} });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(repo.git('status', '--porcelain', '--untracked-files=all')).toBe('');
  });
});
