import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { parse } from 'yaml';
import { runCliCaptured } from '../support/cli.js';
import {
  startScriptedChatServer,
  type ChatStep,
  type ScriptedChatServer,
} from '../support/scripted-chat-server.js';

const PLAN = `type: plan_task
version: 1
payload:
  task_id: ADD-HEALTH
  acceptance_criteria:
    - id: AC-1
      description: GET /health answers 200
      type: functional
      critical: true
      check:
        kind: command
        command: npm test
    - id: AC-2
      description: The README documents /health
      type: documentation
      critical: false
`;

const servers: ScriptedChatServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function workdir(): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'plan-command-'));
  onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
  writeFileSync(
    path.join(directory, 'add-health.md'),
    '# Add a health endpoint\n\nGET /health answers 200 with {"status":"ok"}.\n',
  );
  return directory;
}

async function serve(script: ChatStep[]) {
  const server = await startScriptedChatServer(script);
  servers.push(server);
  return server;
}

const envFor = (server: { url: string }) => ({ OPENAI_BASE_URL: server.url, OPENAI_API_KEY: 'test-key' });

describe('agent-runner plan', () => {
  it('prints the acceptance criteria as YAML and logs every prompt and reply; a tag is refused and repaired', async () => {
    const cwd = workdir();
    const tagged = PLAN.replace('critical: true', 'critical: !!bool true');
    const server = await serve([
      { reply: `Here is the plan:\n\`\`\`yaml\n${tagged}\`\`\`` },
      { reply: PLAN },
    ]);
    const result = await runCliCaptured(['plan', '--prd', 'add-health.md'], { cwd, env: envFor(server) });
    expect(result.stderr).not.toContain('error');
    expect(result.exitCode).toBe(0);
    const printed = parse(result.stdout) as { task_id: string; acceptance_criteria: { id: string }[] };
    expect(printed.task_id).toBe('ADD-HEALTH');
    expect(printed.acceptance_criteria.map((criterion) => criterion.id)).toEqual(['AC-1', 'AC-2']);
    expect(result.stdout).toMatch(/^task_id: ADD-HEALTH\nacceptance_criteria:\n {2}- id: AC-1\n/);

    expect(server.requests).toHaveLength(2);
    const repair = server.requests[1]?.body.messages?.at(-1)?.content ?? '';
    expect(repair).toContain('line 11, column 17: the tag `!!bool` is refused');
    expect(server.requests[0]?.body.messages?.[1]?.content).toContain(
      'GET /health answers 200 with {"status":"ok"}.',
    );

    const metaDir = path.join(cwd, '.agent-runner', 'runs', 'ADD-HEALTH', 'meta');
    const files = readdirSync(metaDir).sort();
    expect(files).toEqual(['0001-plan_task-attempt1.md', '0002-plan_task-attempt2.md']);
    const first = readFileSync(path.join(metaDir, files[0] ?? ''), 'utf8');
    expect(first).toContain('## system');
    expect(first).toContain('critical: !!bool true');
    expect(first).toContain('the tag `!!bool` is refused');
    expect(result.stderr).toContain('.agent-runner/runs/ADD-HEALTH/meta/');
  });

  it('--json and --task-id; an anchor is refused and repaired', async () => {
    const cwd = workdir();
    const withAnchor = PLAN.replace('task_id: ADD-HEALTH', 'task_id: HEALTH-1').replace(
      'type: functional',
      'type: &kind functional',
    );
    const server = await serve([
      { reply: withAnchor },
      { reply: PLAN.replace('task_id: ADD-HEALTH', 'task_id: HEALTH-1') },
    ]);
    const result = await runCliCaptured(
      ['plan', '--prd', 'add-health.md', '--json', '--task-id', 'HEALTH-1'],
      {
        cwd,
        env: envFor(server),
      },
    );
    expect(result.exitCode).toBe(0);
    const printed = JSON.parse(result.stdout) as {
      task_id: string;
      acceptance_criteria: { id: string; check?: unknown }[];
    };
    expect(printed.task_id).toBe('HEALTH-1');
    expect(printed.acceptance_criteria[0]?.check).toEqual({ kind: 'command', command: 'npm test' });
    expect(server.requests[1]?.body.messages?.at(-1)?.content).toContain(
      'line 8, column 13: the anchor `&kind` is refused',
    );
    expect(readdirSync(path.join(cwd, '.agent-runner', 'runs', 'HEALTH-1', 'meta'))).toHaveLength(2);
  });

  it('replies that stay invalid: exit 5, protocol_invalid, raw replies kept', async () => {
    const cwd = workdir();
    const server = await serve([
      { reply: 'I cannot do that.' },
      { reply: 'still prose' },
      { reply: 'type: plan_task\nversion: 3\n' },
    ]);
    const result = await runCliCaptured(['plan', '--prd', 'add-health.md'], { cwd, env: envFor(server) });
    expect(result.exitCode).toBe(5);
    expect(result.stderr).toContain('still invalid after 2 repair(s)');
    expect(result.stdout).toBe('');
    const metaDir = path.join(cwd, '.agent-runner', 'runs', 'ADD-HEALTH', 'meta');
    const raw = readFileSync(path.join(metaDir, '0004-plan_task-protocol-invalid.txt'), 'utf8');
    expect(raw).toContain('I cannot do that.');
    expect(raw).toContain('version: 3');
  });

  it('an unreachable model: exit 5 with the URL', async () => {
    const cwd = workdir();
    const server = await serve([]);
    const url = server.url;
    await server.close();
    servers.splice(0);
    const result = await runCliCaptured(['plan', '--prd', 'add-health.md'], {
      cwd,
      env: { OPENAI_BASE_URL: url, OPENAI_API_KEY: 'k' },
    });
    expect(result.exitCode).toBe(5);
    expect(result.stderr).toContain(`Cannot reach the Meta-agent model at ${url} (connection refused)`);
  });

  it.each([
    ['missing', (_cwd: string) => 'nope.md', /does not exist/],
    ['empty', (cwd: string) => (writeFileSync(path.join(cwd, 'empty.md'), '  \n'), 'empty.md'), /is empty/],
    [
      'binary',
      (cwd: string) => (
        writeFileSync(path.join(cwd, 'bin.md'), Buffer.from([0x89, 0x50, 0x00, 0x01])),
        'bin.md'
      ),
      /looks binary/,
    ],
    [
      'too large',
      (cwd: string) => (writeFileSync(path.join(cwd, 'big.md'), 'x'.repeat(256 * 1024 + 1)), 'big.md'),
      /the limit is 256 KiB/,
    ],
    ['a directory', (_cwd: string) => '.', /is not a file/],
  ])('a %s PRD: exit 2 (prd_invalid) with the fix, before any model call', async (_name, make, message) => {
    const cwd = workdir();
    const server = await serve([]);
    const result = await runCliCaptured(['plan', '--prd', make(cwd)], { cwd, env: envFor(server) });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(server.requests).toHaveLength(0);
  });

  it('a missing API key: exit 2 naming the variable', async () => {
    const cwd = workdir();
    const result = await runCliCaptured(['plan', '--prd', 'add-health.md'], {
      cwd,
      env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
    });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('set the environment variable OPENAI_API_KEY');
  });
});
