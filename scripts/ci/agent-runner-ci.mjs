#!/usr/bin/env node
/**
 * agent-runner-ci: one task in a CI job (the GitHub Action `action.yml` and the GitLab job
 * `templates/ci/gitlab-ci.yml` call it; docs/ci.md). It takes the PRD from a file or a GitHub issue, runs the
 * `agent-runner` of the same package (`run --headless --json [--pr]`), and then tells the CI what happened:
 * the note as the job summary ($GITHUB_STEP_SUMMARY) and in the job log, the step outputs ($GITHUB_OUTPUT), and
 * an exit code the job's result follows (README: Exit codes):
 *   0 COMPLETE                        → 0
 *   3, 124 NEEDS_REVIEW               → the same code with --needs-review fail (default); 0 and a warning with neutral
 *   6 delivery failed                 → 6, with the delivery's reason (summary.delivery.error) as the error
 *   anything else                     → the same code, with the message as an error
 * Plain JavaScript with Node's own modules only: it runs from the installed package, before and without a build.
 *
 * Everything the note and the progress hold may come from the worker (commit subjects, file names, its output):
 * on GitHub they are printed between `::stop-commands::` markers so no line of theirs acts as a workflow command.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { messageOf, outcomeOf } from './ci-outcome.mjs';
import { issuePrd as fencedIssuePrd } from './forge-event.mjs';

const USAGE = `Usage: agent-runner-ci (--prd-file FILE | --issue N | --from-review URL | --followup ID --message-file FILE) [--no-pr] [--timeout 45m]
                       [--needs-review fail|neutral] [-- ARGS for agent-runner run...]`;
/** GitHub refuses a step summary over 1 MiB; the whole note is in the artifact anyway. */
const SUMMARY_LIMIT = 900 * 1024;
const BIN = path.join(import.meta.dirname, '..', '..', 'bin', 'agent-runner.js');
const github = process.env.GITHUB_ACTIONS === 'true';

/** Reads the flags; a usage error exits 2 like agent-runner's own. */
function readOptions(argv) {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'prd-file': { type: 'string' },
        issue: { type: 'string' },
        followup: { type: 'string' },
        'from-review': { type: 'string' },
        'message-file': { type: 'string' },
        pr: { type: 'boolean', default: true },
        'no-pr': { type: 'boolean', default: false },
        timeout: { type: 'string' },
        'needs-review': { type: 'string', default: 'fail' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      console.log(USAGE);
      process.exit(0);
    }
    const prdFile = values['prd-file'] || undefined;
    const issue = values.issue || undefined;
    const followup = values.followup || undefined;
    const fromReview = values['from-review'] || undefined;
    if (fromReview && !/^https?:\/\/[^\s]+$/.test(fromReview))
      throw new Error(`--from-review ${fromReview}: not a request's URL`);
    if ([prdFile, issue, followup, fromReview].filter(Boolean).length !== 1)
      throw new Error('give exactly one of --prd-file and --issue (or --followup with --message-file)');
    if (followup && !/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(followup))
      throw new Error(`--followup ${followup}: not a task id`);
    if (followup && !values['message-file']) throw new Error('--followup needs --message-file');
    if (issue && !/^[1-9][0-9]*$/.test(issue)) throw new Error(`--issue ${issue}: not an issue number`);
    if (!['fail', 'neutral'].includes(values['needs-review']))
      throw new Error(`--needs-review ${values['needs-review']}: fail or neutral`);
    return {
      prdFile,
      issue,
      followup,
      fromReview,
      messageFile: values['message-file'] || undefined,
      pr: values.pr && !values['no-pr'],
      timeout: values.timeout || undefined,
      needsReview: values['needs-review'],
      extra: positionals,
    };
  } catch (error) {
    fail(2, `agent-runner-ci: ${error.message}\n${USAGE}`);
  }
}

/** The issue as a PRD file outside the repository: from the event payload when it is that issue, else the API. */
async function issuePrd(number) {
  const payload = process.env.GITHUB_EVENT_PATH
    ? JSON.parse(readFileSync(process.env.GITHUB_EVENT_PATH, 'utf8'))
    : {};
  let issue = String(payload.issue?.number) === number ? payload.issue : undefined;
  if (!issue) {
    const api = process.env.GITHUB_API_URL ?? 'https://api.github.com';
    const repository = process.env.GITHUB_REPOSITORY;
    if (!repository)
      fail(2, `agent-runner-ci: issue #${number} is not in the event payload and GITHUB_REPOSITORY is unset`);
    const token = process.env.GITHUB_TOKEN ?? process.env.GH_TOKEN;
    const response = await fetch(`${api}/repos/${repository}/issues/${number}`, {
      headers: {
        accept: 'application/vnd.github+json',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
    });
    if (!response.ok)
      fail(
        2,
        `agent-runner-ci: reading issue #${number} of ${repository} failed: HTTP ${response.status}. ` +
          'The job needs `issues: read` (permissions) and GITHUB_TOKEN.',
      );
    issue = await response.json();
  }
  if (!issue.body?.trim()) fail(2, `agent-runner-ci: issue #${number} has no body to use as the PRD`);
  const file = path.join(process.env.RUNNER_TEMP || tmpdir(), `agent-runner-issue-${number}.md`);
  // The issue's title and body are the forge user's words: fenced as quoted input (forge-event.mjs).
  writeFileSync(
    file,
    fencedIssuePrd({
      number: Number(number),
      title: issue.title ?? '',
      body: issue.body,
      author: '',
      labels: [],
      assignees: [],
    }),
  );
  return file;
}

/** Runs agent-runner; stderr goes to the log as it comes (its last lines kept for the message). */
function runTask(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderrTail = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk) => {
      process.stderr.write(chunk);
      stderrTail = (stderrTail + chunk).slice(-4000);
    });
    // A cancelled job signals the whole process group: agent-runner ends the task and writes its note; wait for it.
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => {});
    child.on('close', (code, signal) => {
      const summary = stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => {
          try {
            return JSON.parse(line);
          } catch {
            return undefined;
          }
        })
        .findLast((event) => event?.type === 'summary');
      resolve({ exitCode: code ?? (signal ? 128 : 1), summary, stderrTail });
    });
  });
}

/** Prints attacker-controlled text where GitHub cannot read a workflow command in it. */
function printInert(text) {
  if (!github) return void process.stdout.write(text);
  const token = randomBytes(16).toString('hex');
  process.stdout.write(`::stop-commands::${token}\n${text}\n::${token}::\n`);
}

/** One line, for $GITHUB_OUTPUT and workflow commands. */
const oneLine = (value) => String(value ?? '').replace(/[\r\n]+/g, ' ');

function fail(exitCode, message) {
  console.error(github ? `::error::${oneLine(message).replace(/%/g, '%25')}` : message);
  process.exit(exitCode);
}

const options = readOptions(process.argv.slice(2));
/** A follow-up of agent-runner/<ID> with the reviewer's instruction, or a new task from a PRD. */
async function commandArgs() {
  // A review on a request agent-runner opened: `followup --from-review` reads the comments and checks their authors.
  if (options.fromReview) return ['followup', '--from-review', options.fromReview, '--headless', '--json'];
  if (options.followup) {
    const message = path.resolve(options.messageFile);
    if (!existsSync(message)) fail(2, `agent-runner-ci: the message file ${message} does not exist`);
    return ['followup', options.followup, '--message-file', message, '--headless', '--json'];
  }
  const prd = options.prdFile ? path.resolve(options.prdFile) : await issuePrd(options.issue);
  if (!existsSync(prd)) fail(2, `agent-runner-ci: the PRD file ${prd} does not exist`);
  // A task from an issue: its request closes it, and the issue gets the outcome as a reply.
  const closes = options.issue && options.pr ? ['--closes', options.issue] : [];
  return ['run', '--prd', prd, '--headless', '--json', ...closes];
}
const args = await commandArgs();
if (options.pr) args.push('--pr');
if (options.timeout) args.push('--timeout', options.timeout);
args.push(...options.extra);

const stopToken = randomBytes(16).toString('hex');
if (github) process.stdout.write(`::stop-commands::${stopToken}\n`);
const result = await runTask(args);
if (github) process.stdout.write(`::${stopToken}::\n`);

const { exit, level, outcome } = outcomeOf(result.exitCode, options.needsReview);
const message = messageOf(result);
const notePath = result.summary?.notePath;
const note = notePath && existsSync(notePath) ? readFileSync(notePath, 'utf8') : undefined;

if (process.env.GITHUB_OUTPUT) {
  const outputs = {
    state: result.summary?.state ?? '',
    'exit-code': result.exitCode,
    outcome,
    'task-id': result.summary?.taskId ?? '',
    branch: result.summary?.branch ?? '',
    'note-path': notePath ?? '',
  };
  appendFileSync(
    process.env.GITHUB_OUTPUT,
    Object.entries(outputs)
      .map(([key, value]) => `${key}=${oneLine(value)}\n`)
      .join(''),
  );
}
if (process.env.GITHUB_STEP_SUMMARY) {
  let body = note ?? `No note was written.\n\n\`\`\`\n${result.stderrTail.trim()}\n\`\`\`\n`;
  if (Buffer.byteLength(body) > SUMMARY_LIMIT)
    body = `${Buffer.from(body).subarray(0, SUMMARY_LIMIT).toString('utf8')}\n\n_(cut here: the whole note is in the artifact)_\n`;
  appendFileSync(process.env.GITHUB_STEP_SUMMARY, `${body}\n`);
}
if (note) {
  if (github) process.stdout.write(`::group::Task note ${oneLine(notePath)}\n`);
  else process.stdout.write(`\n================ ${notePath} ================\n\n`);
  printInert(note);
  if (github) process.stdout.write('::endgroup::\n');
}
const escaped = oneLine(message).replace(/%/g, '%25');
if (github) console.log(`::${level} title=agent-runner ${outcome}::${escaped}`);
else console.log(message);
process.exit(exit);
