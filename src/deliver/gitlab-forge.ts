/**
 * The GitLab adapter of the forge port, with GitLab's maintained client (`@gitbeaker/rest`): merge requests of
 * one project, listed by source and target branch, created and edited. A draft is GitLab's own `Draft: ` title
 * prefix, so a draft becomes ready when a later delivery edits the title without it. A 429 or a 5xx is retried
 * as GitLab asks (`Retry-After`, `RateLimit-Reset`) by the requester given to gitbeaker
 * (`gitlab-requester.ts`), under delivery's one retry rule (`forge-retry.ts`), before the failure is reported.
 * `apiUrl` is a self-hosted GitLab's address (`https://gitlab.example.com`), default gitlab.com.
 */
import { Gitlab } from '@gitbeaker/rest';
import { ForgeError, failureKindOf } from './forge-error.js';
import type { ChangeRequest, ChangeRequestContent, ForgeClient, ForgeFailure } from './forge-port.js';
import { askedWaitSeconds, MAX_RETRY_AFTER_SECONDS } from './forge-retry.js';
import { gitLabRequester, gitLabWaitHeaders } from './gitlab-requester.js';

const DRAFT_PREFIX = 'Draft: ';

export interface GitLabForgeOptions {
  token: string;
  /** The project's path on GitLab (`group/name`). */
  repository: string;
  /** Default `https://gitlab.com`. */
  apiUrl?: string;
  /** Milliseconds per second of a wait GitLab asks for (tests make it small); default 1000. */
  retryAfterBaseValue?: number;
}

interface MergeRequestLike {
  iid: number;
  web_url: string;
  state: string;
  title: string;
  draft?: boolean;
  work_in_progress?: boolean;
  source_branch: string;
  target_branch: string;
  sha?: string | null;
}

function changeRequestOf(request: MergeRequestLike): ChangeRequest {
  return {
    number: request.iid,
    url: request.web_url,
    state: request.state === 'merged' ? 'merged' : request.state === 'opened' ? 'open' : 'closed',
    draft: Boolean(request.draft ?? request.work_in_progress ?? request.title.startsWith(DRAFT_PREFIX)),
    head: request.source_branch,
    base: request.target_branch,
    headSha: request.sha ?? null,
  };
}

/** The failure of a gitbeaker call in the port's words; a 403 names the scope and role to grant. */
export function gitLabFailure(error: unknown): ForgeFailure {
  const failed = error as { message?: string; cause?: { response?: Response } };
  const response = failed.cause?.response;
  const status = typeof response?.status === 'number' ? response.status : null;
  const kind = failureKindOf(status);
  const failure: ForgeFailure = { kind, status, message: failed.message ?? String(error) };
  const asked = response?.headers ? askedWaitSeconds(gitLabWaitHeaders(response.headers)) : null;
  if (asked !== null && asked > MAX_RETRY_AFTER_SECONDS) failure.retryAfter = asked;
  if (kind === 'permission')
    failure.permission = 'the `api` scope, on an account with at least the Developer role in the project';
  return failure;
}

/** One GitLab project's client (retries as above) and a call wrapper that reports by kind. */
export function gitLabClient(options: GitLabForgeOptions): {
  api: InstanceType<typeof Gitlab>;
  projectId: string;
  call: <T>(run: () => Promise<T>) => Promise<T>;
} {
  const api = new Gitlab({
    token: options.token,
    host: (options.apiUrl ?? 'https://gitlab.com').replace(/\/+$/, ''),
    requesterFn: gitLabRequester(
      options.retryAfterBaseValue === undefined ? {} : { retryAfterBaseValue: options.retryAfterBaseValue },
    ),
  });
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw new ForgeError(gitLabFailure(error));
    }
  };
  return { api, projectId: options.repository, call };
}

/** A {@link ForgeClient} for one GitLab project. */
export function createGitLabForge(options: GitLabForgeOptions): ForgeClient {
  const { api, projectId, call } = gitLabClient(options);
  const title = (content: ChangeRequestContent) =>
    content.draft
      ? `${DRAFT_PREFIX}${content.title}`
      : content.title.replace(/^(Draft: |\[Draft\] |Draft - )/i, '');
  return {
    kind: 'gitlab',
    async findOpen(head, base) {
      const listed = (await call(() =>
        api.MergeRequests.all({ projectId, sourceBranch: head, targetBranch: base, state: 'opened' }),
      )) as unknown as MergeRequestLike[];
      const found = listed.find((request) => request.source_branch === head);
      return found ? changeRequestOf(found) : null;
    },
    async create(head, base, content) {
      const created = await call(() =>
        api.MergeRequests.create(projectId, head, base, title(content), { description: content.body }),
      );
      return changeRequestOf(created as unknown as MergeRequestLike);
    },
    async get(number) {
      const shown = await call(() => api.MergeRequests.show(projectId, number));
      return changeRequestOf(shown as unknown as MergeRequestLike);
    },
    async getIssue(number) {
      const shown = (await call(() => api.Issues.show(number, { projectId }))) as unknown as {
        iid: number;
        title: string;
        description: string | null;
        web_url: string;
      };
      return { number: shown.iid, title: shown.title, body: shown.description ?? '', url: shown.web_url };
    },
    async commentOnIssue(number, body) {
      await call(() => api.IssueNotes.create(projectId, number, body));
    },
    async update(number, content) {
      const edited = await call(() =>
        api.MergeRequests.edit(projectId, number, { title: title(content), description: content.body }),
      );
      return changeRequestOf(edited as unknown as MergeRequestLike);
    },
  };
}
