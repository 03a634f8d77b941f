/**
 * Delivery: a step after a task's end. It pushes `agent-runner/<ID>` from the host (push.ts), then opens or
 * updates the task's pull/merge request whose body is the evidence (change-request-body.ts), and records what
 * happened in the task's run data (delivery-record.ts) and in a short section at the end of the note. The
 * task's state, its journal and the rest of its note stay as they were; a failure loses nothing (the work is on
 * the local branch) and says what to fix before `agent-runner deliver ID` retries.
 */
import { existsSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config/schema.js';
import type { TaskSummary } from '../core/types.js';
import { UserError } from '../errors.js';
import { readTaskJournal } from '../lifecycle/task-journal-state.js';
import { noteDigest, recordedNoteDigests } from '../notes/note-digest.js';
import { PROJECT_JOURNAL, readProjectJournal, type ProjectResume } from '../parallel/project-journal.js';
import type { Redaction, Redactor } from '../notes/redact.js';
import { forgeToken, forgeTokens, TOKEN_VARIABLES } from '../remote/remote-credentials.js';
import { displayUrl, forgeOf, type ForgeKind, type RemoteUrl } from '../remote/remote-url.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import {
  changeRequestBody,
  changeRequestTitle,
  subtaskSection,
  type ChangeRequestEvidence,
} from './change-request-body.js';
import { appendDelivery, lastPushedSha, type DeliveryOutcome } from './delivery-record.js';
import { ForgeError } from './forge-error.js';
import { MAX_RETRY_AFTER_SECONDS } from './forge-retry.js';
import type { ChangeRequest, ChangeRequestContent, ForgeClient } from './forge-port.js';
import { createGitHubForge } from './github-forge.js';
import { createGitLabForge } from './gitlab-forge.js';
import { pushTaskBranch } from './push.js';
import { writeTaskStateCommit } from './task-state-commit.js';

/** What delivery is asked to do: `deliver.*` with the flags laid over it. */
export type DeliverySettings = Config['deliver'];

/** Makes the forge client of one repository (tests pass their own to reach a scripted server). */
export type ForgeFactory = (input: {
  forge: ForgeKind;
  repository: string;
  token: string;
  apiUrl?: string;
}) => ForgeClient;

export interface DeliverInput {
  repoRoot: string;
  taskId: string;
  settings: DeliverySettings;
  env: NodeJS.ProcessEnv;
  /** The process's redaction point: every forge token is added to it before anything is written. */
  redaction: Redaction;
  forgeFactory?: ForgeFactory;
  /**
   * Where the caller last pushed the branch itself (a fleet node pushes after every worker run), the push's lease
   * instead of the delivery record's; with the git config carrying the caller's credential for that push.
   */
  pushedBy?: { leaseFor: (remote: string) => string | null; credentialConfig?: Record<string, string> };
}

/** The default factory: the official client of each forge. */
export const defaultForgeFactory: ForgeFactory = (input) => {
  const options = {
    token: input.token,
    repository: input.repository,
    ...(input.apiUrl ? { apiUrl: input.apiUrl } : {}),
  };
  return input.forge === 'github' ? createGitHubForge(options) : createGitLabForge(options);
};

/** Whether the settings ask for any delivery at all. */
export function deliveryWanted(settings: DeliverySettings): boolean {
  return settings.push || settings.pr;
}

/** Delivers a finished task; never throws for the remote's or the forge's refusal (it is in the outcome). */
export async function deliverTask(input: DeliverInput): Promise<DeliveryOutcome> {
  const layout = taskLayout(input.repoRoot, input.taskId);
  input.redaction.add(forgeTokens(input.env));
  const journal = readTaskJournal(layout.runDir, input.taskId);
  // A project of subtasks delivers its integration branch (`agent-runner/<ID>`, like a task's), a section per subtask.
  const project =
    !journal && existsSync(path.join(layout.runDir, PROJECT_JOURNAL))
      ? readProjectJournal(layout.runDir)
      : null;
  const summary = journal?.finished ?? project?.finished;
  if (!summary) {
    throw new UserError(
      'task_not_found',
      `Task ${input.taskId} has no finished attempt in ${input.repoRoot} (see \`agent-runner status\`): ` +
        'only a task that ended can be delivered.',
    );
  }
  const base = nothingDelivered(layout.branch);
  const record = async (outcome: DeliveryOutcome): Promise<DeliveryOutcome> => {
    const safe = input.redaction.value(outcome);
    appendDelivery(layout.runDir, { type: 'delivery', outcome: safe }, input.redaction.redact);
    await addNoteSection(input, summary, safe);
    return safe;
  };
  const complete = summary.state === 'COMPLETE';
  if (!complete && input.settings.when === 'complete') {
    return record({
      ...base,
      skipped:
        `the task ended ${summary.state}, and deliver.when is complete: nothing was pushed. ` +
        `Set deliver.when: always (or \`agent-runner deliver ${input.taskId} --draft\`) to deliver it as a draft.`,
    });
  }
  const forgeOverride = namedForgeOf(input.settings, journal?.options?.forge ?? project?.forge);
  // A task's journal travels with its branch (a follow-up from the remote alone rebuilds the task from it).
  const stateRef = journal
    ? await writeTaskStateCommit({ ...input, runDir: layout.runDir, redact: input.redaction.redact })
    : null;
  const pushed = await pushTaskBranch({
    repoRoot: input.repoRoot,
    taskId: input.taskId,
    remoteName: input.settings.remote,
    env: input.env,
    forgeOverride,
    leaseFor: input.pushedBy?.leaseFor ?? ((remote) => lastPushedSha(layout.runDir, remote)),
    redact: input.redaction.redact,
    ...(input.pushedBy?.credentialConfig ? { credentialConfig: input.pushedBy.credentialConfig } : {}),
    ...(stateRef ? { extraRefs: [stateRef] } : {}),
  });
  if (!pushed.ok) {
    return record({
      ...base,
      remote: pushed.remote ? displayUrl(pushed.remote.raw) : null,
      error: { kind: pushed.kind, message: pushed.message },
    });
  }
  const after: DeliveryOutcome = {
    ...base,
    pushed: true,
    remote: displayUrl(pushed.remote.raw),
    sha: pushed.sha,
  };
  if (!input.settings.pr) return record(after);
  const evidence: RequestEvidence = journal
    ? {
        evidence: { summary, runs: journal.runs, baseline: journal.baseline },
        extra: [],
        taskBase: journal.options?.base,
      }
    : {
        evidence: { summary, runs: [], baseline: null },
        extra: subtaskSections(input.repoRoot, project, input.redaction.redact),
        taskBase: undefined,
      };
  return record(await requestOutcome(input, evidence, after, pushed.remote, forgeOverride));
}

/** An outcome before anything was delivered. */
function nothingDelivered(branch: string): DeliveryOutcome {
  return {
    pushed: false,
    url: null,
    error: null,
    skipped: null,
    branch,
    remote: null,
    sha: null,
    changeRequest: null,
  };
}

/** The forge named now, else the one the task was started with (a self-hosted forge's host says nothing). */
function namedForgeOf(settings: DeliverySettings, started: ForgeKind | undefined): ForgeKind | null {
  return settings.forge !== 'auto' ? settings.forge : (started ?? null);
}

/** What a request's body is built from: the task's records, and for a project one section per subtask. */
interface RequestEvidence {
  evidence: ChangeRequestEvidence;
  extra: string[];
  taskBase: string | undefined;
}

/** Each subtask of a project, from the journal of its last attempt, in the order they were planned. */
function subtaskSections(repoRoot: string, project: ProjectResume | null, redact: Redactor): string[] {
  if (!project) return [];
  return project.subtasks.map((subtask) => {
    const last = project.states[subtask.id];
    const journal = last ? readTaskJournal(taskLayout(repoRoot, last.taskId).runDir, last.taskId) : null;
    const finished = journal?.finished;
    return subtaskSection(
      subtask.id,
      finished?.state ?? last?.state ?? 'not started',
      journal && finished ? { summary: finished, runs: journal.runs, baseline: journal.baseline } : null,
      redact,
    );
  });
}

/** Opens or updates the request of a pushed branch; the outcome says its page, or why not. */
async function requestOutcome(
  input: DeliverInput,
  records: RequestEvidence,
  after: DeliveryOutcome,
  remote: RemoteUrl,
  forgeOverride: ForgeKind | null,
): Promise<DeliveryOutcome> {
  const { summary } = records.evidence;
  const complete = summary.state === 'COMPLETE';
  const forge = forgeOf(remote, forgeOverride);
  if (forge === null) {
    return {
      ...after,
      error: {
        kind: 'no_forge',
        message:
          `The branch is pushed, but the forge of ${after.remote} is not known from its host: set ` +
          `deliver.forge (github or gitlab) and deliver.apiUrl, then run \`agent-runner deliver ${input.taskId}\`.`,
      },
    };
  }
  const token = forgeToken(forge, input.env)?.token;
  if (!token) {
    return {
      ...after,
      error: {
        kind: 'auth',
        message:
          `The branch is pushed, but opening the ${forge === 'github' ? 'pull' : 'merge'} request needs a token: ` +
          `set ${TOKEN_VARIABLES[forge].join(' or ')}, then run \`agent-runner deliver ${input.taskId}\`.`,
      },
    };
  }
  const content: ChangeRequestContent = {
    title: changeRequestTitle(summary, input.redaction.redact),
    body: changeRequestBody(records.evidence, input.redaction.redact, records.extra, input.settings.closes),
    draft: !complete,
  };
  try {
    const client = (input.forgeFactory ?? defaultForgeFactory)({
      forge,
      repository: remote.path,
      token,
      ...(input.settings.apiUrl ? { apiUrl: input.settings.apiUrl } : {}),
    });
    const target = await baseBranch(input, records.taskBase);
    const request = await openOrUpdate(client, after.branch, target, content);
    if (input.settings.closes !== undefined)
      await client.commentOnIssue(input.settings.closes, issueReply(summary.state, request));
    return {
      ...after,
      url: request.url,
      changeRequest: { number: request.number, draft: request.draft },
    };
  } catch (error) {
    if (!(error instanceof ForgeError)) throw error;
    return {
      ...after,
      error: { kind: error.failure.kind, message: forgeMessage(error, forge, input.taskId) },
    };
  }
}

/**
 * The reply on the issue a request closes: the outcome and the request's page, both ours (a state of the
 * task, the URL the forge's API answered), nothing of the issue's or the worker's text.
 */
export function issueReply(state: string, request: ChangeRequest): string {
  const what = request.draft ? 'a draft' : 'ready for review';
  return `agent-runner worked on this issue: the task ended **${state}**; its request (${what}): ${request.url}`;
}

/** The open request of the branch updated, or a new one; a 422 "exists" (a race) finds and updates it. */
async function openOrUpdate(
  client: ForgeClient,
  head: string,
  base: string,
  content: ChangeRequestContent,
): Promise<ChangeRequest> {
  const open = await client.findOpen(head, base);
  if (open) return client.update(open.number, content);
  try {
    return await client.create(head, base, content);
  } catch (error) {
    if (!(error instanceof ForgeError) || error.failure.kind !== 'exists') throw error;
    const existing = await client.findOpen(head, base);
    if (!existing) throw error;
    return client.update(existing.number, content);
  }
}

/**
 * The branch the request merges into: `deliver.base`, else the task's `--base` when it names a local branch,
 * else the branch the host repository has checked out, else `main`.
 */
async function baseBranch(input: DeliverInput, taskBase: string | undefined): Promise<string> {
  if (input.settings.base) return input.settings.base;
  if (taskBase) {
    const named = await tryGit(['rev-parse', '--verify', '--quiet', `refs/heads/${taskBase}`], {
      cwd: input.repoRoot,
    });
    if (named.exitCode === 0) return taskBase;
  }
  const current = await tryGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: input.repoRoot });
  const name = current.stdout.trim();
  return current.exitCode === 0 && name && !name.startsWith('agent-runner/') ? name : 'main';
}

/** A forge failure in one message with its fix. */
function forgeMessage(error: ForgeError, forge: ForgeKind, taskId: string): string {
  const { failure } = error;
  const what = forge === 'github' ? 'pull request' : 'merge request';
  const retry = `then run \`agent-runner deliver ${taskId}\``;
  const said = `${failure.status ?? 'no answer'}: ${failure.message}`;
  switch (failure.kind) {
    case 'auth':
      return `The branch is pushed, but ${forge} refused the token (${said}): it is wrong or expired. Set a valid ${TOKEN_VARIABLES[forge].join(' or ')}, ${retry}.`;
    case 'permission':
      return `The branch is pushed, but the token may not open a ${what} (${said}). Grant it ${failure.permission ?? 'write access to merge requests (the api scope)'}, ${retry}.`;
    case 'rate_limited':
      if (failure.retryAfter !== undefined)
        return `The branch is pushed, but ${forge} rate-limited the ${what} call (${said}) and asked to wait ${failure.retryAfter} s, longer than delivery waits (${MAX_RETRY_AFTER_SECONDS} s). Wait that long, ${retry}.`;
      return `The branch is pushed, but ${forge} rate-limited the ${what} call (${said}) after retries. Wait, ${retry}.`;
    case 'unavailable':
    case 'unreachable':
      return `The branch is pushed, but ${forge}'s API did not answer the ${what} call (${said}) after retries. Check deliver.apiUrl and ${forge}'s status, ${retry}.`;
    default:
      return `The branch is pushed, but the ${what} could not be opened (${said}). ${retry[0]?.toUpperCase()}${retry.slice(1)}.`;
  }
}

const NOTE_SECTION_MARK = '<!-- agent-runner: delivery -->';

/**
 * Writes (or rewrites) the note's delivery section at its end, and records the note's new digest beside the
 * outcome. Only a note still as the runner wrote it is touched: an edited note is the person's.
 */
async function addNoteSection(
  input: DeliverInput,
  summary: TaskSummary,
  outcome: DeliveryOutcome,
): Promise<void> {
  if (!summary.notePath) return;
  const layout = taskLayout(input.repoRoot, input.taskId);
  const file = path.resolve(input.repoRoot, summary.notePath);
  const text = await readFile(file, 'utf8').catch(() => null);
  if (text === null) return;
  const digests = await recordedNoteDigests(layout.runDir, path.basename(file));
  if (!digests.includes(noteDigest(text))) return;
  const kept = text.includes(NOTE_SECTION_MARK)
    ? text.slice(0, text.indexOf(NOTE_SECTION_MARK))
    : `${text.replace(/\n*$/, '')}\n\n`;
  const updated = `${kept}${NOTE_SECTION_MARK}\n${input.redaction.redact(deliverySection(outcome))}`;
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, updated);
  await rename(temporary, file);
  appendDelivery(
    layout.runDir,
    { type: 'note_written', path: file, sha256: noteDigest(updated) },
    input.redaction.redact,
  );
}

/** The note's short delivery section. */
export function deliverySection(outcome: DeliveryOutcome): string {
  const lines = ['## Delivery', ''];
  if (outcome.skipped) lines.push(`Not delivered: ${outcome.skipped}`);
  else {
    lines.push(
      outcome.pushed
        ? `- Pushed \`${outcome.branch}\` at \`${outcome.sha?.slice(0, 12)}\` to ${outcome.remote}`
        : `- Not pushed (${outcome.remote ?? 'no remote'})`,
    );
    if (outcome.url)
      lines.push(`- ${outcome.changeRequest?.draft ? 'Draft request' : 'Request'}: ${outcome.url}`);
    if (outcome.error)
      lines.push(`- Failed (${outcome.error.kind}): ${outcome.error.message.replace(/\s+/g, ' ')}`);
  }
  return `${lines.join('\n')}\n`;
}
