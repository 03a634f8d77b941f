/**
 * The CI job's side of forge-event.mjs: the decision for the event that started this job, written as
 * `key=value` lines for the job's later steps. Run as `node forge-event.mjs` before anything is installed.
 *
 * GitHub Actions (GITHUB_ACTIONS): the job's event (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH), outputs to
 * GITHUB_OUTPUT, the author's access asked with GITHUB_TOKEN at GITHUB_API_URL.
 *
 * GitLab CI (GITLAB_CI): a pipeline a project webhook started through a pipeline trigger token
 * (`https://HOST/api/v4/projects/ID/ref/REF/trigger/pipeline?token=...`): CI_PIPELINE_SOURCE is `trigger` and the
 * webhook's payload is the file TRIGGER_PAYLOAD names. Outputs to AR_OUTPUT; the member's access asked with
 * GITLAB_TOKEN at CI_SERVER_URL. The payload is not signed: whoever holds the trigger token can send any, and
 * can already run any pipeline with any variables, so the token is a writer's credential; the author check keeps
 * out the comments of people without write access, which GitLab itself reports in an honest payload. An event
 * of another project than the job's (CI_PROJECT_ID) is ignored.
 *
 * Outputs: kind (task, followup, ignore), issue-number, request-number, task-id, refused, reason, message-file (a
 * follow-up's instruction), request-url (built from the job's own server and project and the number, never
 * from text), prd-file (GitLab: a task's PRD, the issue fenced as quoted input; GitHub's job reads the issue
 * itself with `agent-runner-ci --issue`).
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  FORGE_DEFAULTS,
  authorise,
  decide,
  followupInstruction,
  githubAccess,
  gitlabAccess,
  normaliseGithub,
  normaliseGitlab,
} from './forge-event.mjs';

const settingsOf = (env) => ({
  label: env.AR_LABEL ?? FORGE_DEFAULTS.label,
  trigger: env.AR_TRIGGER ?? FORGE_DEFAULTS.trigger,
  assignee: env.AR_ASSIGNEE ?? FORGE_DEFAULTS.assignee,
});

/** The GitHub job's event, the access checker and where its outputs go. */
function githubJob(env) {
  const name = env.GITHUB_EVENT_NAME ?? '';
  const payload = env.GITHUB_EVENT_PATH ? JSON.parse(readFileSync(env.GITHUB_EVENT_PATH, 'utf8')) : {};
  const repository = env.GITHUB_REPOSITORY ?? payload.repository?.full_name ?? '';
  return {
    event: normaliseGithub(name, payload),
    access: githubAccess({
      api: env.GITHUB_API_URL ?? 'https://api.github.com',
      repository,
      token: env.GITHUB_TOKEN ?? env.GH_TOKEN,
    }),
    output: env.GITHUB_OUTPUT,
    temp: env.RUNNER_TEMP || tmpdir(),
    where: (number) => `request #${number}`,
    requestUrl: (number) =>
      `${env.GITHUB_SERVER_URL ?? 'https://github.com'}/${repository}/pull/${Number(number)}`,
    writesPrd: false,
  };
}

/** The GitLab job's event (a webhook's payload through a pipeline trigger), or why there is none. */
function gitlabJob(env) {
  const base = {
    access: gitlabAccess({
      api: env.CI_SERVER_URL ?? 'https://gitlab.com',
      projectId: Number(env.CI_PROJECT_ID),
      token: env.GITLAB_TOKEN,
    }),
    output: env.AR_OUTPUT,
    temp: tmpdir(),
    where: (number) => `merge request !${number}`,
    requestUrl: (number) => `${env.CI_PROJECT_URL ?? ''}/-/merge_requests/${Number(number)}`,
    writesPrd: true,
  };
  if (env.CI_PIPELINE_SOURCE !== 'trigger' || !env.TRIGGER_PAYLOAD)
    return {
      ...base,
      event: {
        ignore: `the pipeline was not started by a webhook through a trigger token (CI_PIPELINE_SOURCE ${env.CI_PIPELINE_SOURCE || 'unset'})`,
      },
    };
  let payload;
  try {
    payload = JSON.parse(readFileSync(env.TRIGGER_PAYLOAD, 'utf8'));
  } catch {
    return { ...base, event: { ignore: 'the trigger payload is not a webhook payload (JSON)' } };
  }
  if (String(payload?.project?.id) !== String(env.CI_PROJECT_ID))
    return { ...base, event: { ignore: "the event is for another project than the pipeline's" } };
  return { ...base, event: normaliseGitlab(payload) };
}

/** The decision for this job's event, as outputs and one line in the log. */
export async function main(env = process.env) {
  const job = env.GITLAB_CI === 'true' ? gitlabJob(env) : githubJob(env);
  const decision = await authorise(decide(job.event, settingsOf(env)), job.access);
  let messageFile = '';
  let prdFile = '';
  if (decision.kind === 'followup') {
    messageFile = path.join(job.temp, 'agent-runner-followup.md');
    writeFileSync(messageFile, followupInstruction(job.event.text ?? '', job.where(decision.request)));
  }
  if (decision.kind === 'task' && job.writesPrd) {
    prdFile = path.join(job.temp, `agent-runner-issue-${Number(decision.issue)}.md`);
    writeFileSync(prdFile, decision.prd);
  }
  const outputs = {
    kind: decision.kind,
    'issue-number': decision.kind === 'task' ? Number(decision.issue) : '',
    'request-number': decision.kind === 'followup' ? Number(decision.request) : '',
    'task-id': decision.taskId ?? '',
    refused: decision.refused ? 'true' : 'false',
    'message-file': messageFile,
    'prd-file': prdFile,
    'request-url': decision.kind === 'followup' ? job.requestUrl(decision.request) : '',
    reason: decision.kind === 'ignore' ? decision.reason : decision.why,
  };
  if (job.output)
    appendFileSync(
      job.output,
      Object.entries(outputs)
        .map(([key, value]) => `${key}=${String(value).replace(/[\r\n]+/g, ' ')}\n`)
        .join(''),
    );
  // The reason may name a login or a label (forge text): one line, and no workflow command can start it.
  console.log(
    `agent-runner: ${decision.kind}: ${outputs.reason.replace(/[\r\n]+/g, ' ').replace(/^::/, ': :')}`,
  );
}
