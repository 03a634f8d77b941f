/**
 * On a terminal, `ask_human` asks the person and passes the answer back to the Meta-agent. The CLI runs as its
 * own process on a real pseudo-terminal (util-linux `script`), the person's answer is typed into it.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { decisionReply, planReply } from '../support/meta-replies.js';
import { startScriptedChatServer, type ScriptedChatServer } from '../support/scripted-chat-server.js';
import { createNodeRepo } from '../support/task-repo.js';
import { cliArgs } from '../support/cli-bundle.js';

let chat: ScriptedChatServer;

beforeAll(async () => {
  chat = await startScriptedChatServer();
});
afterAll(async () => {
  await chat?.close();
});

describe('ask_human on a terminal', () => {
  it('asks the person and passes the answer back to the Meta-agent', async () => {
    const id = 'E2E-TTY';
    chat.push(
      { reply: planReply(id, [{ id: 'AC-1', description: 'slugify works' }]) },
      { reply: decisionReply('ask_human', 'Accents are not specified.', 'Should slugify strip accents?') },
      { reply: decisionReply('abort', 'The person wants accents kept; out of scope.') },
    );
    const repo = createNodeRepo();
    onTestFinished(repo.remove);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      OPENAI_BASE_URL: chat.url,
      OPENAI_API_KEY: 'tty-test-key-123456',
      TERM: 'dumb',
    };
    delete env.CI;
    const command = [process.execPath, ...cliArgs(['run', '--prd', 'PRD.md', '--task-id', id])]
      .map((part) => `'${part}'`)
      .join(' ');
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: repo.root,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    let answered = false;
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString('utf8');
      if (!answered && screen.includes('Should slugify strip accents?')) {
        answered = true;
        child.stdin.write('Keep them, please\r');
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(answered, screen).toBe(true);
    expect(code, screen).toBe(1);
    const lastRequest = chat.requests.at(-1);
    expect(JSON.stringify(lastRequest?.body.messages)).toContain('answered: Keep them, please');
    expect(screen).toContain('FAILED');
  });
});
