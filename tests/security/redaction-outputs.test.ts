/**
 * A value matching `redact.patterns`, printed by the worker (in its command, in the command's output, in its
 * final message) and repeated by the Meta-agent, is looked for in everything agent-runner writes: stdout
 * (`--json` and human), stderr, the note, the journal, the worker's logs, codex's session files, the
 * Meta-agent call logs, the gateway log and the cassette. The real CLI runs as its own process (so stdout and
 * stderr are the real streams), with the real codex in the real sandbox. In every place, a canary printed the
 * same way but not matching any pattern is found first: the search can see what it looks for.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assessmentReply, planReply, runWorkerReply } from '../support/meta-replies.js';
import { startScriptedChatServer, type ScriptedChatServer } from '../support/scripted-chat-server.js';
import {
  ScriptedResponsesServer,
  assistantMessage,
  commandCall,
} from '../support/scripted-responses-server.js';
import { createNodeRepo, git } from '../support/task-repo.js';
import { filesUnder } from '../support/files-under.js';
import { cliArgs } from '../support/cli-bundle.js';

const SECRET = 'SECRET-Q7W3E9R2T5Y8';
const CANARY = 'CANARY-visible-5b7e';

interface Outputs {
  taskId: string;
  repoRoot: string;
  exitCode: number;
  stdout: string;
  stderr: string;
  cassette: string;
}

const cleanups: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** One whole task whose worker prints the secret and the canary; `json` picks the output mode. */
async function runPrintingTask(taskId: string, json: boolean): Promise<Outputs> {
  const chat: ScriptedChatServer = await startScriptedChatServer([
    { reply: planReply(taskId, [{ id: 'AC-1', description: 'ok.txt committed' }]) },
    { reply: runWorkerReply('Print the values, then commit ok.txt.') },
    {
      reply: assessmentReply(true, ['AC-1'], `ok.txt committed; the worker printed ${CANARY} and ${SECRET}.`),
    },
  ]);
  const upstream = await new ScriptedResponsesServer([
    {
      kind: 'output',
      items: [
        commandCall(
          // The secret in the command itself, and built at run time so that only the output holds it.
          `echo "${CANARY} ${SECRET}"; printf 'SEC%s %s\\n' 'RET-Q7W3E9R2T5Y8' '${CANARY}'; ` +
            'echo ok > ok.txt && git add ok.txt && git commit -q -m "Add ok.txt"',
        ),
      ],
    },
    { kind: 'output', items: [assistantMessage(`Committed ok.txt. Output: ${CANARY} ${SECRET}`)] },
  ]).start();
  const repo = createNodeRepo();
  const cassetteDir = mkdtempSync(path.join(tmpdir(), 'sec-redaction-'));
  cleanups.push(
    () => chat.close(),
    () => upstream.close(),
    repo.remove,
    () => rmSync(cassetteDir, { recursive: true, force: true }),
  );
  writeFileSync(
    path.join(repo.root, 'agent-runner.yaml'),
    `redact:\n  patterns:\n    - 'SECRET-[A-Z0-9]{12}'\n`,
  );
  git(repo.root, 'add', 'agent-runner.yaml');
  git(repo.root, 'commit', '-q', '-m', 'config');
  const cassette = path.join(cassetteDir, 'run.cassette.json');
  const result = await execa(
    process.execPath,
    cliArgs([
      'run',
      '--prd',
      'PRD.md',
      '--task-id',
      taskId,
      '--skip-dod',
      '--record',
      cassette,
      ...(json ? ['--json'] : []),
    ]),
    {
      cwd: repo.root,
      reject: false,
      stdin: 'ignore',
      env: {
        OPENAI_BASE_URL: chat.url,
        OPENAI_API_KEY: 'sec-redaction-meta-key-81f2',
        AGENT_RUNNER_WORKER_BASE_URL: upstream.baseUrl('127.0.0.1'),
        AGENT_RUNNER_WORKER_MODEL: 'scripted-test-model',
        CI: 'true',
      },
    },
  );
  return {
    taskId,
    repoRoot: repo.root,
    exitCode: result.exitCode ?? -1,
    stdout: String(result.stdout),
    stderr: String(result.stderr),
    cassette,
  };
}

/** Finds the canary and not the secret in `text` (`where` names it in the failure). */
function expectRedacted(where: string, text: string): void {
  expect(text.includes(CANARY), `${where}: the canary is there (the search can see)`).toBe(true);
  expect(text.includes(SECRET), `${where}: the secret is not`).toBe(false);
  expect(text.includes('[REDACTED]'), `${where}: what was hidden is marked`).toBe(true);
}

let jsonRun: Outputs;
let humanRun: Outputs;

beforeAll(async () => {
  jsonRun = await runPrintingTask('sec-redact-json', true);
  humanRun = await runPrintingTask('sec-redact-human', false);
}, 600_000);

describe('a redacted value printed by the worker', () => {
  it('both runs completed (the worker really printed it)', () => {
    expect(jsonRun.exitCode, jsonRun.stderr).toBe(0);
    expect(humanRun.exitCode, humanRun.stderr).toBe(0);
  });

  it('is not on stdout with --json, which stays valid JSONL', () => {
    expectRedacted('stdout --json', jsonRun.stdout);
    for (const line of jsonRun.stdout.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('is not on stdout in human mode (the summary repeats the Meta-agent)', () => {
    expectRedacted('stdout human', humanRun.stdout);
  });

  it('is not in the progress lines on stderr', () => {
    expectRedacted('stderr progress', humanRun.stderr);
    expect(jsonRun.stderr).not.toContain(SECRET);
  });

  it.each([
    ['the note', (run: Outputs) => [path.join(run.repoRoot, '.agent-runner', `task-${run.taskId}.md`)]],
    ['the journal', (run: Outputs) => [path.join(runDir(run), 'events.jsonl')]],
    [
      'the Meta-agent call logs',
      (run: Outputs) => filesUnder(path.join(runDir(run), 'meta')).map((f) => f.file),
    ],
    ['the worker logs', (run: Outputs) => filesUnder(path.join(runDir(run), 'run-1')).map((f) => f.file)],
    [
      'codex session files',
      (run: Outputs) => filesUnder(path.join(runDir(run), 'codex-home')).map((f) => f.file),
    ],
    ['the cassette', (run: Outputs) => [run.cassette]],
  ])('is not in %s', (where, files) => {
    for (const run of [jsonRun, humanRun]) {
      const list = files(run);
      expect(list.length, `${where}: files exist`).toBeGreaterThan(0);
      expectRedacted(`${where} (${run.taskId})`, list.map((file) => readFileSync(file, 'utf8')).join('\n'));
    }
  });

  it('is in no file agent-runner wrote for the task (run directory, note, cassette)', () => {
    for (const run of [jsonRun, humanRun]) {
      const files = [
        ...filesUnder(runDir(run)),
        { file: run.cassette, text: readFileSync(run.cassette, 'utf8') },
      ];
      const leaking = files.filter((entry) => entry.text.includes(SECRET)).map((entry) => entry.file);
      expect(leaking).toEqual([]);
    }
  });
});

function runDir(run: Outputs): string {
  return path.join(run.repoRoot, '.agent-runner', 'runs', run.taskId);
}
