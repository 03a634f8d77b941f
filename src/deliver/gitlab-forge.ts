/**
 * The GitLab adapter of the forge port, with GitLab's maintained client (`@gitbeaker/rest`): merge requests of
 * one project, listed by source and target branch, created and edited. A draft is GitLab's own `Draft: ` title
 * prefix, so a draft becomes ready when a later delivery edits the title without it. gitbeaker retries 429 and
 * 502 itself; other 5xx answers are retried here, a bounded number of times, before the failure is reported.
 * `apiUrl` is a self-hosted GitLab's address (`https://gitlab.example.com`), default gitlab.com.
 */
import { Gitlab } from '@gitbeaker/rest';
import { ForgeError, failureKindOf } from './forge-error.js';
import type { ChangeRequest, ChangeRequestContent, ForgeClient, ForgeFailure } from './forge-port.js';

/** Retries of a 500, 503 or 504 (gitbeaker retries 429 and 502 on its own). */
const SERVER_ERROR_RETRIES = 2;
const DRAFT_PREFIX = 'Draft: ';

export interface GitLabForgeOptions {
  token: string;
  /** The project's path on GitLab (`group/name`). */
  repository: string;
  /** Default `https://gitlab.com`. */
  apiUrl?: string;
  /** Milliseconds between retries of a server error; default 1000. */
  retryDelayMs?: number;
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
  const failed = error as { name?: string; message?: string; cause?: { response?: { status?: number } } };
  let status = failed.cause?.response?.status ?? null;
  // gitbeaker's own retries ran out: its message names the last status.
  const retried = /last status code: (\d+)/.exec(failed.message ?? '');
  if (status === null && retried) status = Number(retried[1]);
  const kind = failureKindOf(status);
  const failure: ForgeFailure = { kind, status, message: failed.message ?? String(error) };
  if (kind === 'permission')
    failure.permission = 'the `api` scope, on an account with at least the Developer role in the project';
  return failure;
}

/** A {@link ForgeClient} for one GitLab project. */
export function createGitLabForge(options: GitLabForgeOptions): ForgeClient {
  const api = new Gitlab({
    token: options.token,
    host: (options.apiUrl ?? 'https://gitlab.com').replace(/\/+$/, ''),
  });
  const projectId = options.repository;
  const delay = options.retryDelayMs ?? 1000;
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await run();
      } catch (error) {
        const failure = gitLabFailure(error);
        const retryable = failure.status !== null && [500, 503, 504].includes(failure.status);
        if (!retryable || attempt >= SERVER_ERROR_RETRIES) throw new ForgeError(failure);
        await new Promise((resolve) => setTimeout(resolve, delay * (attempt + 1)));
      }
    }
  };
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
    async update(number, content) {
      const edited = await call(() =>
        api.MergeRequests.edit(projectId, number, { title: title(content), description: content.body }),
      );
      return changeRequestOf(edited as unknown as MergeRequestLike);
    },
  };
}
