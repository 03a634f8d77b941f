import { symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MEMORY_INSTRUCTIONS_HEADING, mergeInstructions } from '../../src/memory/memory-view.js';
import {
  PROJECT_INSTRUCTIONS_MAX_BYTES,
  readProjectInstructions,
} from '../../src/memory/project-instructions.js';
import { buildClaudeArgv } from '../../src/worker/claude-adapter.js';
import { qwenContextSettings } from '../../src/worker/qwen-adapter.js';
import { runCliCaptured } from '../support/cli.js';
import { createTempRepo } from '../support/git-repo.js';

const ENTRY =
  '---\ntitle: Tabs\nstatus: active\nsource: person\ncreated: 2026-11-01T00:00:00Z\n---\n\nIndent with tabs.\n';
const ARCHIVED =
  '---\ntitle: Spaces\nstatus: archived\nsource: person\ncreated: 2026-11-01T00:00:00Z\n---\n\nARCHIVED-TEXT\n';

type Preview = { instructionsFiles: { worker: string; path: string; text: string }[] };

describe("the memory bank merged after the project's own file", () => {
  it('gives each CLI its committed project files, then the entries; gemini the entries alone', async () => {
    const repo = await createTempRepo();
    await repo.commit('base', {
      'AGENTS.md': 'PROJECT-AGENTS: run npm test.\n',
      'CLAUDE.md': 'PROJECT-CLAUDE: small functions.\n',
      'GEMINI.md': 'PROJECT-GEMINI\n',
      '.agent-runner/memory/0001-tabs.md': ENTRY,
      '.agent-runner/memory/0002-spaces.md': ARCHIVED,
    });
    // Not committed: no worker reads it, and neither does the preview.
    await writeFile(path.join(repo.root, 'AGENTS.md'), 'UNCOMMITTED-AGENTS\n');
    const preview = async (worker: string) => {
      const result = await runCliCaptured(['memory', 'preview', '--worker', worker, '--json'], {
        cwd: repo.root,
        env: {},
      });
      expect(result.exitCode, result.stderr).toBe(0);
      return (JSON.parse(result.stdout) as Preview).instructionsFiles;
    };

    const [codex] = await preview('codex');
    expect(codex?.path).toBe('/codex-home/AGENTS.md');
    expect(codex?.text).toMatch(
      new RegExp(
        `^PROJECT-AGENTS: run npm test\\.\\n\\n${MEMORY_INSTRUCTIONS_HEADING.replace(/[()]/g, '\\$&')}\\n`,
      ),
    );
    expect(codex?.text).toContain('Indent with tabs.');
    expect(codex?.text).not.toContain('UNCOMMITTED-AGENTS');
    expect(codex?.text).not.toContain('ARCHIVED-TEXT');
    const [claude] = await preview('claude');
    expect(claude?.text.indexOf('PROJECT-CLAUDE: small functions.')).toBe(0);
    expect(claude?.text.indexOf('Indent with tabs.')).toBeGreaterThan(0);
    // Gemini CLI reads the project's GEMINI.md itself: its file holds the entries alone.
    const [gemini] = await preview('gemini');
    expect(gemini?.path).toBe('/codex-home/gemini/.gemini/GEMINI.md');
    expect(gemini?.text.startsWith(MEMORY_INSTRUCTIONS_HEADING)).toBe(true);
    expect(gemini?.text).not.toContain('PROJECT-GEMINI');
    // Qwen Code reads QWEN.md and AGENTS.md (none and one committed here); OpenCode the first of AGENTS.md,
    // CLAUDE.md, CONTEXT.md.
    const [qwen] = await preview('qwen');
    expect(qwen?.path).toBe('/codex-home/qwen/.qwen/.agent-runner/QWEN.md');
    expect(qwen?.text.indexOf('PROJECT-AGENTS: run npm test.\n\n# Team decisions')).toBe(0);
    const [opencode] = await preview('opencode');
    expect(opencode?.text.indexOf('PROJECT-AGENTS: run npm test.\n\n# Team decisions')).toBe(0);
    expect(opencode?.text).not.toContain('PROJECT-CLAUDE');

    const text = await runCliCaptured(['memory', 'preview', '--worker', 'codex'], {
      cwd: repo.root,
      env: {},
    });
    expect(text.stdout).toContain(
      "== codex: /codex-home/AGENTS.md (in the sandbox: the project's AGENTS.override.md or AGENTS.md as committed, then the entries; the workspace's copy is not read) ==\nPROJECT-AGENTS: run npm test.\n\n# Team decisions",
    );
  });

  it('reads only regular files at the root of the commit, and names one that is too large', async () => {
    const repo = await createTempRepo();
    await symlink('/etc/passwd', path.join(repo.root, 'CLAUDE.md'));
    const head = await repo.commit('base', {
      'AGENTS.md': `${'a'.repeat(PROJECT_INSTRUCTIONS_MAX_BYTES + 1)}\n`,
      'docs/CLAUDE.md': 'NESTED\n',
    });
    const read = await readProjectInstructions(repo.root, head, ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md']);
    expect(Object.keys(read)).toEqual(['AGENTS.md']);
    expect(read['AGENTS.md']).toMatch(
      /^\[agent-runner: the project's AGENTS\.md \(32002 bytes\) is larger than 32000/,
    );
    expect(JSON.stringify(read)).not.toContain('root:');
  });

  it('merges with the project text first, once, and shows its terminal controls as escapes', () => {
    expect(mergeInstructions(['Own text.\n'], '# Team\n')).toBe('Own text.\n\n# Team\n');
    expect(mergeInstructions(['QWEN\n', 'AGENTS\n'], '# Team\n')).toBe('QWEN\n\nAGENTS\n\n# Team\n');
    expect(mergeInstructions([], '# Team\n')).toBe('# Team\n');
    expect(mergeInstructions(['  \n'], '')).toBe('');
    expect(mergeInstructions(['Own\u001b[31m text'], '')).toBe('Own\\x1b[31m text\n');
  });

  it("turns each CLI's own read of the workspace's project file off", () => {
    const argv = buildClaudeArgv({
      mode: 'exec',
      prompt: 'go',
      sessionId: 'S',
      model: 'm',
      excludeProjectFiles: ['/workspace/CLAUDE.md'],
    });
    expect(argv.slice(argv.indexOf('--settings'), argv.indexOf('--settings') + 2)).toEqual([
      '--settings',
      '{"claudeMdExcludes":["/workspace/CLAUDE.md"]}',
    ]);
    expect(argv.indexOf('--settings')).toBeLessThan(argv.indexOf('--'));
    expect(qwenContextSettings('/h')).toEqual({
      file: '/h/.qwen/settings.json',
      text: '{"context":{"fileName":".agent-runner/QWEN.md"}}',
    });
  });
});
