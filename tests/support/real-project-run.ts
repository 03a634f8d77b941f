/**
 * One end-to-end run of the real CLI on a generated project: a git repository made by `files`, a scripted
 * model (agent-runner's own --model-script server: a plan with one criterion, one worker run that writes the
 * given files and commits, an assessment), the real codex in the real sandbox, the DoD detected from the
 * project. Returns the JSONL events, the exit code and the note.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { onTestFinished } from 'vitest';
import { stringify } from 'yaml';
import { git, writeFileCommand } from './task-repo.js';
import { cliArgs } from './cli-bundle.js';

export interface RealProjectRun {
  exitCode: number | null;
  events: Record<string, unknown>[];
  summary: Record<string, unknown> | undefined;
  note: string;
  stderr: string;
  root: string;
  /** When the process ended (ms since the epoch). */
  endedAt: number;
}

/** A temp git repository with `files` committed on main (plus a PRD); removed when the test ends. */
export function realProjectRepo(
  prefix: string,
  files: Record<string, string>,
  prepare?: (root: string) => void,
): string {
  const root = mkdtempSync(path.join(tmpdir(), `${prefix}-`));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'config', 'user.name', 'Test User');
  git(root, 'config', 'user.email', 'test@example.com');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  prepare?.(root);
  writeFileSync(
    path.join(root, 'PRD.md'),
    '# Add the feature\n\nAdd the feature with a test; the tests pass.\n',
  );
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'initial');
  return root;
}

/** Runs `agent-runner run` on `root` with a script whose worker writes `write` and commits it. */
export async function runRealProject(
  root: string,
  taskId: string,
  write: Record<string, string>,
  extraArgs: string[] = [],
  script: {
    /** The plan's criteria (default: one critical `test` criterion without a check). */
    criteria?: Record<string, unknown>[];
    /** Meta-agent replies after the assessment (e.g. an `abort` after a refusal). */
    then?: Record<string, unknown>[];
    /** Worker model replies after the first run's (a later run's commands and closing message). */
    laterRuns?: Record<string, unknown>[];
  } = {},
): Promise<RealProjectRun> {
  const meta = [
    stringify({
      type: 'plan_task',
      version: 1,
      payload: {
        task_id: taskId,
        acceptance_criteria: script.criteria ?? [
          {
            id: 'AC-1',
            description: 'The feature exists and the project tests pass.',
            type: 'test',
            critical: true,
          },
        ],
      },
    }),
    stringify({
      type: 'next_action',
      version: 1,
      payload: {
        decision: { action: 'run_worker', reason: 'Write the feature with its test and commit.' },
        used_patterns: ['implement_feature'],
        worker_call: {
          // The configured default worker (`worker.type` of the project's agent-runner.yaml; codex by default).
          worker_type: '{{workerType}}',
          mode: 'exec',
          prompt: 'Write the feature and its test, commit.',
        },
      },
    }),
    stringify({
      type: 'completion_assessment',
      version: 1,
      payload: {
        all_criteria_satisfied: true,
        summary: 'Committed; the DoD passed in the sandbox.',
        by_criterion: [{ id: 'AC-1', status: 'passed', comment: 'The DoD passed.' }],
        retrospective: [],
      },
    }),
    ...(script.then ?? []).map((reply) => stringify(reply)),
  ];
  const worker = [
    {
      run: Object.entries(write)
        .map(([file, content]) => writeFileCommand(file, content))
        .join('\n'),
    },
    {
      run: `git add ${Object.keys(write).join(' ')} && git commit -q -m "Add the feature" && git log --oneline -1`,
    },
    { message: 'Added the feature with its test and committed it.' },
    ...(script.laterRuns ?? []),
  ];
  const scriptFile = path.join(root, '..', `${path.basename(root)}-model-script.yaml`);
  writeFileSync(scriptFile, stringify({ meta, worker }));
  onTestFinished(() => rmSync(scriptFile, { force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, CI: '1' };
  delete env.OPENAI_API_KEY;
  delete env.OPENAI_BASE_URL;
  const child = spawn(
    process.execPath,
    cliArgs([
      'run',
      '--prd',
      'PRD.md',
      '--task-id',
      taskId,
      '--model-script',
      scriptFile,
      '--json',
      ...extraArgs,
    ]),
    { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const endedAt = Date.now();
  const events = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  const summary = events.find((event) => event.type === 'summary');
  let note = '';
  try {
    note = readFileSync(path.join(root, '.agent-runner', `task-${taskId}.md`), 'utf8');
  } catch {
    // no note: the assertions on it say so
  }
  return { exitCode, events, summary, note, stderr, root, endedAt };
}

/** The DoD results of the last `dod` event. */
export function lastDod(run: RealProjectRun): {
  source: string;
  results: { name: string; command: string; status: string }[];
} {
  const dod = run.events.filter((event) => event.type === 'dod').at(-1) as
    { dod: { source: string; results: { name: string; command: string; status: string }[] } } | undefined;
  return dod?.dod ?? { source: 'none', results: [] };
}
