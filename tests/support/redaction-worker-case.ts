/**
 * A redacted value printed by one worker CLI beside codex (Claude Code, Gemini CLI, Qwen Code, OpenCode), in
 * its command and in its output, is looked for in everything agent-runner keeps for the task: the run
 * directory (the journal, the worker logs, the Meta-agent call logs, each worker's own state: claude's
 * transcripts, gemini's and qwen's chats, opencode's SQLite database), the note and the `--json` output. A
 * canary printed the same way but matching no pattern is found in the worker's own state first (the search can
 * see what it looks for). The worker's state survives the redaction: the next run resumes the same session and
 * the task ends COMPLETE. The same run is the demo a user with only that worker's key runs (AGENT_RUNNER_WORKER,
 * no OpenAI key: the note names the worker and its model), and it is recorded: replayed in a fresh repository
 * with no upstream at all, it ends COMPLETE with the same work. One task run serves the three questions (they
 * were three files, three times the runs). The real CLI, the real binaries in the real sandbox, the models
 * scripted by agent-runner's own `--model-script` server. The bodies of tests/security/redaction-workers-*.test.ts.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, onTestFinished } from 'vitest';
import type { Cassette } from '../../src/gateway/cassette.js';
import { runCliCaptured } from './cli.js';
import {
  DEMO_PRD,
  SLUG_FIXED,
  SLUG_TEST,
  assessment,
  npmTestPlan,
  demoRepo,
  heredoc,
  jsonEvents,
  nextAction,
} from './demo-task.js';
import { taskContainers } from './task-containers.js';
import { filesUnder } from './files-under.js';
import { git } from './task-repo.js';

const SECRET = 'SECRET-Q7W3E9R2T5Y8';
const CANARY = 'CANARY-visible-5b7e';

function script(taskId: string, worker: string): string {
  const meta = [
    npmTestPlan(taskId),
    nextAction(worker, 'Look at the environment first.', 'Print the build values.'),
    assessment(false, 'Nothing is implemented yet.'),
    nextAction(
      worker,
      'Continue in the same session.',
      'Implement slugify with its tests; commit.',
      'resume',
    ),
    assessment(true, 'npm test passes on the committed tree.'),
  ];
  const turns = [
    // The secret in the command itself, and built at run time so that only the output holds it.
    { run: `echo "${CANARY} ${SECRET}"; printf 'SEC%s %s\\n' 'RET-Q7W3E9R2T5Y8' '${CANARY}'` },
    { message: `Printed ${CANARY} and ${SECRET}.` },
    {
      run: `${heredoc('slug.js', SLUG_FIXED)}\n${heredoc('slug.test.js', SLUG_TEST)}\ngit add -A && git -c user.name=w -c user.email=w@e commit -q -m 'Add slugify'`,
    },
    { message: 'Added slugify and its tests.' },
  ];
  return JSON.stringify({ meta, worker: turns });
}

/** A worker beside codex, the model its note names, and the config it needs. */
export interface RedactionWorkerCase {
  worker: string;
  model: string;
  /** `agent-runner.yaml` lines for the worker (its API), before the redaction pattern. */
  workers: string;
  /** Whether the recorded run is replayed too (one more task run). */
  replay: boolean;
}

/** The case's run (redaction, resume, the only worker, recorded), then (`replay`) its replay with no upstream. */
export async function redactedRunResumedAndReplayed({
  worker,
  model,
  workers,
  replay,
}: RedactionWorkerCase): Promise<void> {
  const taskId = `REDACT-${worker.toUpperCase()}`;
  const repo = demoRepo(`${workers}redact:\n  patterns:\n    - 'SECRET-[A-Z0-9]{12}'\n`);
  const scriptFile = `${repo}-script.json`;
  writeFileSync(scriptFile, script(taskId, worker));
  onTestFinished(() => rmSync(scriptFile, { force: true }));
  onTestFinished(async () => expect(await taskContainers(taskId, repo)).toEqual([]));
  // As a user with only this worker's key runs it: no OpenAI key.
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true', AGENT_RUNNER_WORKER: worker };
  delete env.OPENAI_API_KEY;
  const cassette = `${repo}-cassette.json`;
  onTestFinished(() => rmSync(cassette, { force: true }));
  const result = await runCliCaptured(
    [
      'run',
      '--prd',
      DEMO_PRD,
      '--task-id',
      taskId,
      '--json',
      '--model-script',
      scriptFile,
      '--record',
      cassette,
    ],
    { cwd: repo, env },
  );
  const events = jsonEvents(result.stdout);
  const summary = events.at(-1) as unknown as { state: string; notePath: string };
  expect(summary.state, result.stderr).toBe('COMPLETE');
  const started = events.filter((event) => event.type === 'worker_started');
  expect(started.map((event) => [event.worker, event.mode])).toEqual([
    [worker, 'exec'],
    [worker, 'resume'],
  ]);
  const note = readFileSync(summary.notePath, 'utf8');
  expect(note).toContain(`| Worker | ${worker} (${model}) |`);
  expect(note).toMatch(/Definition of Done: 1\/1 check\(s\) passed/);

  // The second run continued the first one's session, from the state redacted after the first.
  const records = new Map(
    events
      .filter((event) => event.type === 'run_recorded')
      .map((event) => {
        const { run, record } = event as unknown as { run: number; record: { threadId?: string } };
        return [run, record.threadId] as const;
      }),
  );
  expect(records.get(1)).toMatch(/\S{8,}/);
  expect(records.get(2)).toBe(records.get(1));
  // ...and with its whole history: the resumed run's first request carries what the first run printed.
  const { exchanges } = JSON.parse(readFileSync(cassette, 'utf8')) as Cassette;
  const resumed = exchanges
    .filter((exchange) => exchange.kind === 'worker')
    .map((exchange) => JSON.stringify(exchange.request))
    .find((request) => request.includes('Implement slugify'));
  expect(resumed).toContain(CANARY);
  expect(resumed).not.toContain(SECRET);
  expect(events.filter((event) => event.type === 'worker_finished').map((event) => event.failed)).toEqual([
    false,
    false,
  ]);

  const runDir = path.join(repo, '.agent-runner', 'runs', taskId);
  // The worker's own state recorded what it printed: the canary is there, so the search sees that state.
  const state = filesUnder(path.join(runDir, 'codex-home', worker), 'latin1');
  expect(
    state.filter((entry) => entry.text.includes(CANARY)).map((entry) => entry.file),
    `${worker}'s state records the run`,
  ).not.toEqual([]);
  const kept = [
    ...filesUnder(runDir, 'latin1'),
    { file: summary.notePath, text: note },
    { file: 'stdout', text: result.stdout },
    { file: 'stderr', text: result.stderr },
  ];
  expect(kept.filter((entry) => entry.text.includes(SECRET)).map((entry) => entry.file)).toEqual([]);

  if (!replay) return;
  // The replay has no model at all: a closed endpoint, no key; every answer comes from the cassette.
  const replayRepo = demoRepo(workers);
  onTestFinished(async () => expect(await taskContainers(taskId, replayRepo)).toEqual([]));
  const replayed = await runCliCaptured(
    ['run', '--prd', DEMO_PRD, '--task-id', taskId, '--json', '--replay', cassette],
    {
      cwd: replayRepo,
      env: { ...env, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', ANTHROPIC_API_KEY: '', GEMINI_API_KEY: '' },
    },
  );
  const replaySummary = jsonEvents(replayed.stdout).at(-1) as unknown as { state: string };
  expect(replaySummary.state, replayed.stderr).toBe('COMPLETE');
  const slug = (root: string) => git(root, 'show', `agent-runner/${taskId}:slug.js`);
  expect(slug(replayRepo)).toBe(slug(repo));
}
