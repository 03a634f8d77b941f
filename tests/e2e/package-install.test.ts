/**
 * What a user and the CI templates get: `npm pack` of this checkout, `npm install -g` of that tarball into a
 * prefix of its own (dependencies from the npm registry), and the installed `agent-runner` run in a fresh git
 * repository outside this checkout with only the prefix's bin/ on the PATH for it. A file the runtime reads but
 * the tarball lacks, a dependency left in devDependencies, or an image tag computed from files the tarball does
 * not hold shows here. The CI script runs as the GitHub Action's own step runs it (its `run:` text from
 * action.yml) with a fake GITHUB_* environment.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DEMO = path.join(ROOT, 'examples', 'slugify');
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

let work = '';
let prefixBin = '';
let packed: string[] = [];

/** The environment of a CI job: the prefix's bin/ first, git and docker from the system, no model key. */
function jobEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${prefixBin}:/usr/local/bin:/usr/bin:/bin` };
  delete env.OPENAI_API_KEY;
  delete env.GITHUB_ACTIONS;
  delete env.GITLAB_CI;
  return { ...env, ...extra };
}

function run(command: string, args: string[], cwd: string, env = jobEnv()): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: 300_000 });
}

/** A fresh copy of the demo project as a git repository of its own, outside this checkout. */
function demoRepository(name: string): string {
  const repo = path.join(work, name);
  mkdirSync(repo);
  cpSync(path.join(DEMO, 'repo'), repo, { recursive: true });
  const git = (...args: string[]) =>
    run('git', ['-c', 'user.name=demo', '-c', 'user.email=demo@example.invalid', ...args], repo);
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  expect(git('commit', '-q', '-m', 'Initial demo project').status).toBe(0);
  return repo;
}

beforeAll(() => {
  expect(
    existsSync(path.join(ROOT, 'dist', 'cli.js')),
    'dist/cli.js is missing: run `npm run build` (scripts/setup.sh does)',
  ).toBe(true);
  work = mkdtempSync(path.join(tmpdir(), 'ar-package-'));
  // --ignore-scripts: prepack would rebuild dist/ under the other tests that run the built CLI at the same time.
  const pack = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(pack.status, pack.stderr).toBe(0);
  const [info] = JSON.parse(pack.stdout) as [{ filename: string; files: { path: string }[] }];
  packed = info.files.map((file) => file.path);
  const prefix = path.join(work, 'prefix');
  const install = spawnSync(
    'npm',
    ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', path.join(work, info.filename)],
    { cwd: work, encoding: 'utf8', timeout: 300_000 },
  );
  expect(install.status, install.stderr).toBe(0);
  prefixBin = path.join(prefix, 'bin');
}, 360_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed and installed agent-runner', () => {
  it('ships what a run reads and no tests or sources', () => {
    for (const file of [
      'bin/agent-runner.js',
      'dist/cli.js',
      'dist/web/app.js',
      'web/index.html',
      'Dockerfile.worker',
      'templates/task-note.md.hbs',
      'patterns/implement_feature.yaml',
      'protocols/next_action.yaml',
      'scripts/ci/agent-runner-ci.mjs',
    ])
      expect(packed).toContain(file);
    expect(packed.filter((file) => /^(src|tests|bench|examples|web\/src)\//.test(file))).toEqual([]);
    expect(
      packed.filter((file) => file.startsWith('dist/') && !/^dist\/(cli(-\w+)?|web\/app)\.js$/.test(file)),
    ).toEqual([]);
  });

  it('is the agent-runner on the PATH, with the package version and the checkout image tag', () => {
    const repo = demoRepository('version');
    const which = run('bash', ['-c', 'command -v agent-runner'], repo);
    expect(which.stdout.trim()).toBe(path.join(prefixBin, 'agent-runner'));
    expect(run('agent-runner', ['--version'], repo).stdout.trim()).toBe(VERSION);
    const installed = run('agent-runner', ['image', 'tag'], repo);
    const checkout = run(process.execPath, [path.join(ROOT, 'bin', 'agent-runner.js'), 'image', 'tag'], repo);
    expect(installed.status, installed.stderr).toBe(0);
    expect(installed.stdout.trim()).toMatch(/^agent-runner-worker:codex-/);
    expect(installed.stdout.trim()).toBe(checkout.stdout.trim());
  });

  it('doctor --json sees the worker image the set-up built', () => {
    const repo = demoRepository('doctor');
    const doctor = run('agent-runner', ['doctor', '--json'], repo);
    const report = JSON.parse(doctor.stdout) as { checks: { name: string; ok: boolean; detail: string }[] };
    const image = report.checks.find((check) => check.name === 'Worker image');
    expect(image, doctor.stdout).toBeDefined();
    // The set-up built it: seen. Without it, the check names the command that builds it.
    expect(image?.ok ? image.detail : `missing: ${image?.detail}`).toMatch(/^agent-runner-worker:codex-/);
  });

  it('runs the demo task to COMPLETE and writes its note', () => {
    const repo = demoRepository('demo');
    const result = run(
      'agent-runner',
      [
        'run',
        '--prd',
        path.join(DEMO, 'PRD.md'),
        '--task-id',
        'PKG-DEMO',
        '--model-script',
        path.join(DEMO, 'model-script.yaml'),
      ],
      repo,
    );
    expect(result.status, `stderr:\n${result.stderr}`).toBe(0);
    const note = readFileSync(path.join(repo, '.agent-runner', 'task-PKG-DEMO.md'), 'utf8');
    expect(note).toMatch(/\*\*State\*\* \| \*\*COMPLETE\*\*/);
  }, 300_000);
});

/** The text of action.yml's "Run the task" step, run by bash as a composite step runs it. */
function actionRunStep(): string {
  const action = parse(readFileSync(path.join(ROOT, 'action.yml'), 'utf8')) as {
    runs: { steps: { id?: string; run?: string }[] };
  };
  const step = action.runs.steps.find((candidate) => candidate.id === 'run');
  if (!step?.run) throw new Error('action.yml has no step with id run');
  return step.run;
}

/** A fake GitHub Actions job around the demo: an `issues` event whose issue body is the PRD. */
function githubJob(name: string, inputs: Record<string, string>) {
  const repo = demoRepository(name);
  const files = path.join(work, `${name}-github`);
  mkdirSync(files);
  const [title, ...body] = readFileSync(path.join(DEMO, 'PRD.md'), 'utf8').split('\n');
  const event = path.join(files, 'event.json');
  writeFileSync(
    event,
    JSON.stringify({
      action: 'labeled',
      issue: {
        number: 7,
        title: title?.replace(/^# /, ''),
        body: body.join('\n'),
        html_url: 'https://example.invalid/7',
      },
    }),
  );
  const summary = path.join(files, 'summary.md');
  const output = path.join(files, 'output');
  writeFileSync(summary, '');
  writeFileSync(output, '');
  const env = jobEnv({
    GITHUB_ACTIONS: 'true',
    GITHUB_EVENT_PATH: event,
    GITHUB_STEP_SUMMARY: summary,
    GITHUB_OUTPUT: output,
    GITHUB_REPOSITORY: 'example/demo',
    GITHUB_API_URL: 'http://127.0.0.1:9',
    RUNNER_TEMP: files,
    AR_PRD_FILE: '',
    AR_ISSUE: '7',
    AR_PR: 'false',
    AR_TIMEOUT: '',
    AR_NEEDS_REVIEW: 'fail',
    AR_ARGS: '',
    ...inputs,
  });
  const result = run('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', actionRunStep()], repo, env);
  const outputs = Object.fromEntries(
    readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  return {
    repo,
    result,
    outputs,
    summary: readFileSync(summary, 'utf8'),
    prd: path.join(files, 'agent-runner-issue-7.md'),
  };
}

describe('the GitHub Action step with the installed package', () => {
  it('takes the PRD from the issue, writes the note as the summary and the outputs, exit 0', () => {
    const job = githubJob('action-complete', {
      AR_ARGS: `--task-id\nCI-DEMO\n--model-script\n${path.join(DEMO, 'model-script.yaml')}\n`,
    });
    expect(job.result.status, `stderr:\n${job.result.stderr}`).toBe(0);
    // The issue's title and body, fenced as the forge user's quoted words.
    expect(readFileSync(job.prd, 'utf8')).toMatch(
      /^# Issue 7\n[\s\S]*\n```text\nAdd slugify\n\nAdd a `slugify\(text\)`/,
    );
    const note = readFileSync(path.join(job.repo, '.agent-runner', 'task-CI-DEMO.md'), 'utf8');
    expect(note).toMatch(/\*\*State\*\* \| \*\*COMPLETE\*\*/);
    expect(job.summary).toContain(note);
    expect(job.outputs).toMatchObject({
      state: 'COMPLETE',
      'exit-code': '0',
      outcome: 'complete',
      'task-id': 'CI-DEMO',
      branch: 'agent-runner/CI-DEMO',
    });
    // The note (worker-written text among it) is printed where no line of it is read as a workflow command.
    const stop = /::stop-commands::([0-9a-f]{32})\n/g;
    const tokens = [...job.result.stdout.matchAll(stop)].map((match) => match[1]);
    expect(tokens.length).toBe(2);
    const [, noteToken] = tokens;
    const inert = job.result.stdout.slice(
      job.result.stdout.indexOf(`::stop-commands::${noteToken}`),
      job.result.stdout.indexOf(`::${noteToken}::`),
    );
    expect(inert).toContain(note.trim());
    expect(job.result.stdout).toMatch(/::notice title=agent-runner complete::agent-runner: COMPLETE, exit 0/);
  }, 300_000);

  it('maps NEEDS_REVIEW to a warning with needs-review: neutral, and to exit 3 with fail', () => {
    const script = path.join(work, 'ask-human.yaml');
    const [plan] = (parse(readFileSync(path.join(DEMO, 'model-script.yaml'), 'utf8')) as { meta: string[] })
      .meta;
    writeFileSync(
      script,
      [
        'meta:',
        ...[
          plan ?? '',
          'type: next_action\nversion: 1\npayload:\n  decision:\n    action: ask_human\n    reason: unclear\n  question: Which locale?\n',
        ].map((reply) => `  - |\n${reply.replace(/^/gm, '    ')}`),
        'worker: []',
        '',
      ].join('\n'),
    );
    const args = (id: string) => `--task-id\n${id}\n--model-script\n${script}\n`;
    const neutral = githubJob('action-neutral', { AR_NEEDS_REVIEW: 'neutral', AR_ARGS: args('CI-NEUTRAL') });
    expect(neutral.result.status, `stderr:\n${neutral.result.stderr}`).toBe(0);
    expect(neutral.outputs).toMatchObject({
      state: 'NEEDS_REVIEW',
      'exit-code': '3',
      outcome: 'needs-review',
    });
    expect(neutral.result.stdout).toMatch(
      /::warning title=agent-runner needs-review::agent-runner: NEEDS_REVIEW, exit 3/,
    );
    expect(neutral.summary).toMatch(/\*\*State\*\* \| \*\*NEEDS_REVIEW\*\*/);

    const failing = githubJob('action-fail', { AR_ARGS: args('CI-FAIL') });
    expect(failing.result.status, `stderr:\n${failing.result.stderr}`).toBe(3);
    expect(failing.result.stdout).toMatch(/::error title=agent-runner needs-review::/);
  }, 300_000);

  it('refuses a job with neither a PRD file nor an issue, exit 2, before running anything', () => {
    const job = githubJob('action-usage', { AR_ISSUE: '' });
    expect(job.result.status).toBe(2);
    expect(job.result.stderr).toMatch(/::error::agent-runner-ci: give exactly one of --prd-file and --issue/);
    expect(existsSync(path.join(job.repo, '.agent-runner'))).toBe(false);
  });
});
