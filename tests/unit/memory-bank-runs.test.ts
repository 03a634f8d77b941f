import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildPromptContext } from '../../src/meta/prompt-context.js';
import { renderWorkerPrompt } from '../../src/patterns/worker-prompt.js';
import { instructionsFilePath, withInstructionsFile } from '../../src/worker/instructions-file.js';
import { WORKER_TYPES } from '../../src/worker/worker-kinds.js';
import { compileScope, defaultScope, memoryBankScope, mergeScope } from '../../src/workspace/scope/scope.js';

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'memory-runs-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs the wrapped command as the sandbox would (sh, then exec of the CLI), here with `cat` as the CLI. */
function runWrapped(
  file: string,
  instructions: string | undefined,
  settings?: { file: string; text: string },
): string {
  const wrapped = withInstructionsFile(
    { argv: ['cat', file, ...(settings ? [settings.file] : [])], env: {} },
    file,
    instructions,
    settings,
  );
  const [program = '', ...args] = wrapped.argv;
  return execFileSync(program, args, { env: { PATH: process.env.PATH, ...wrapped.env }, encoding: 'utf8' });
}

describe('the memory bank in the instructions file of each worker CLI', () => {
  it('names the own global file of each CLI, in its home', () => {
    expect(Object.fromEntries(WORKER_TYPES.map((type) => [type, instructionsFilePath(type, '/h')]))).toEqual({
      codex: '/h/AGENTS.md',
      claude: '/h/CLAUDE.md',
      gemini: '/h/.gemini/GEMINI.md',
      qwen: '/h/.qwen/.agent-runner/QWEN.md',
      opencode: '/h/.config/opencode/AGENTS.md',
    });
  });

  it('writes the file before the CLI starts, through no link the worker left, and removes it when empty', async () => {
    const home = await tempDir();
    const file = path.join(home, '.gemini', 'GEMINI.md');
    expect(runWrapped(file, '# Team decisions\n\nUse "pg" $HOME `x`')).toBe(
      '# Team decisions\n\nUse "pg" $HOME `x`\n',
    );
    const target = path.join(home, 'elsewhere.md');
    await writeFile(target, 'untouched\n');
    await rm(file);
    await symlink(target, file);
    expect(runWrapped(file, 'fresh')).toBe('fresh\n');
    expect(await readFile(target, 'utf8')).toBe('untouched\n');
    expect(() => runWrapped(file, '')).toThrow(/No such file/);
  });

  it('writes the settings file beside it, through no link either, again before every run', async () => {
    const home = await tempDir();
    const file = path.join(home, '.qwen', '.agent-runner', 'QWEN.md');
    const settings = { file: path.join(home, '.qwen', 'settings.json'), text: '{"context":{}}' };
    expect(runWrapped(file, 'entries', settings)).toBe('entries\n{"context":{}}\n');
    const target = path.join(home, 'elsewhere.json');
    await writeFile(target, 'untouched\n');
    await rm(settings.file);
    await symlink(target, settings.file);
    expect(runWrapped(file, 'entries', settings)).toBe('entries\n{"context":{}}\n');
    expect(await readFile(target, 'utf8')).toBe('untouched\n');
  });

  it('leaves the command alone when no memory bank was read', () => {
    const run = { argv: ['codex', 'exec'], env: { CODEX_HOME: '/c' } };
    expect(withInstructionsFile(run, '/c/AGENTS.md', undefined)).toBe(run);
  });
});

describe('the memory bank in the prompts and the scope', () => {
  it('puts the section into the worker prompt and the Meta-agent context', () => {
    const section = '- Queue on PostgreSQL (.agent-runner/memory/0001-q.md): use pg-boss';
    const prompt = renderWorkerPrompt({
      taskId: 'T',
      title: 't',
      branch: 'b',
      acceptanceCriteria: [],
      scope: 's',
      patterns: [],
      instruction: 'go',
      decisions: section,
    });
    expect(prompt).toContain("## The team's decisions (memory bank)");
    expect(prompt).toContain(section);
    expect(
      renderWorkerPrompt({
        taskId: 'T',
        title: 't',
        branch: 'b',
        acceptanceCriteria: [],
        scope: 's',
        patterns: [],
        instruction: 'go',
      }),
    ).not.toContain('memory bank');
    const context = buildPromptContext(
      { taskId: 'T', prd: 'p', decisions: section, request: 'r' },
      'system',
      100_000,
    );
    expect(context.stable).toContain(section);
  });

  it('makes a memory folder outside .agent-runner read-only (a change is a violation), liftable by the config', () => {
    expect(memoryBankScope('.agent-runner/memory')).toEqual({});
    const scope = compileScope(mergeScope(defaultScope(), memoryBankScope('docs/decisions/')));
    expect(scope.access('docs/decisions/0001-a.md')).toBe('read');
    expect(scope.access('docs/other.md')).toBe('write');
    const lifted = compileScope(
      mergeScope(mergeScope(defaultScope(), memoryBankScope('docs/decisions')), {
        read: ['!/docs/decisions/'],
      }),
    );
    expect(lifted.access('docs/decisions/0001-a.md')).toBe('write');
    expect(compileScope(defaultScope()).access('.agent-runner/memory/0001-a.md')).toBe('runner_owned');
  });
});
