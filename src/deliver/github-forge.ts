/**
 * The GitHub adapter of the forge port, with GitHub's official client (`@octokit/rest`) and its retry and
 * throttling plugins: a 5xx is retried, a secondary rate limit or an exhausted quota waits for the time GitHub
 * names (`retry-after`, `x-ratelimit-reset`) a bounded number of times, then the failure is reported by kind.
 * `apiUrl` is GitHub Enterprise's API (`https://HOST/api/v3`) or a test server.
 *
 * A draft becomes ready for review (and back) only through GraphQL (`markPullRequestReadyForReview`,
 * `convertPullRequestToDraft`, given the pull request's `node_id`): the REST API's update ignores `draft`. The
 * same client's `octokit.graphql` sends it, to `/graphql` (`/api/graphql` on GitHub Enterprise).
 */
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import { ForgeError, failureKindOf } from './forge-error.js';
import type { ChangeRequest, ChangeRequestContent, ForgeClient, ForgeFailure } from './forge-port.js';

const GitHubClient = Octokit.plugin(retry, throttling);

/** Retries of a rate-limited call before it is reported. */
const RATE_LIMIT_RETRIES = 2;

export interface GitHubForgeOptions {
  token: string;
  /** `owner/name` of the repository on GitHub. */
  repository: string;
  /** Default `https://api.github.com`. */
  apiUrl?: string;
  /** Milliseconds per second of a wait GitHub asks for (tests make it small); default 1000. */
  retryAfterBaseValue?: number;
}

interface PullLike {
  number: number;
  node_id: string;
  html_url: string;
  state: string;
  draft?: boolean;
  merged_at?: string | null;
  head: { ref: string; sha?: string };
  base: { ref: string };
}

function changeRequestOf(pull: PullLike): ChangeRequest {
  return {
    number: pull.number,
    url: pull.html_url,
    state: pull.merged_at ? 'merged' : pull.state === 'open' ? 'open' : 'closed',
    draft: Boolean(pull.draft),
    head: pull.head.ref,
    base: pull.base.ref,
    headSha: pull.head.sha ?? null,
  };
}

/** The failure of an Octokit call in the port's words; a 403 names the permission to grant. */
export function gitHubFailure(error: unknown): ForgeFailure {
  const requestError = error as {
    status?: number;
    message?: string;
    response?: { headers?: Record<string, string | undefined>; data?: { message?: string } };
  };
  const status =
    typeof requestError.status === 'number' && requestError.status > 0 ? requestError.status : null;
  const headers = requestError.response?.headers ?? {};
  const message = requestError.response?.data?.message ?? requestError.message ?? String(error);
  const graphqlKind = graphqlFailureKind(error);
  let kind = graphqlKind ?? failureKindOf(status);
  // GitHub answers an exhausted quota and a secondary limit with 403 too.
  if (status === 403 && (headers['x-ratelimit-remaining'] === '0' || /rate limit/i.test(message)))
    kind = 'rate_limited';
  const failure: ForgeFailure = { kind, status, message };
  if (kind === 'permission') {
    const accepted = headers['x-accepted-github-permissions'];
    failure.permission =
      `"Pull requests: write" and "Contents: write" for a fine-grained token` +
      `${accepted ? ` (GitHub asked for ${accepted})` : ''}, or the \`repo\` scope for a classic token`;
  }
  return failure;
}

/**
 * The kind of a GraphQL answer's `errors` (HTTP 200 with `{errors: [{type, message}]}`), by the first error's
 * `type`; null when `error` is no GraphQL answer.
 */
function graphqlFailureKind(error: unknown): ForgeFailure['kind'] | null {
  const failed = error as { name?: string; errors?: { type?: string }[] };
  if (failed.name !== 'GraphqlResponseError') return null;
  const type = failed.errors?.[0]?.type;
  if (type === 'FORBIDDEN' || type === 'INSUFFICIENT_SCOPES') return 'permission';
  if (type === 'RATE_LIMITED') return 'rate_limited';
  return 'invalid';
}

/** The GraphQL mutations that move a pull request between draft and ready (REST cannot). */
const DRAFT_MUTATIONS = {
  ready: `mutation ($id: ID!) {
  markPullRequestReadyForReview(input: { pullRequestId: $id }) { pullRequest { isDraft } }
}`,
  draft: `mutation ($id: ID!) {
  convertPullRequestToDraft(input: { pullRequestId: $id }) { pullRequest { isDraft } }
}`,
} as const;

/** A {@link ForgeClient} for one GitHub repository. */
export function createGitHubForge(options: GitHubForgeOptions): ForgeClient {
  const [owner, repo] = options.repository.split('/', 2) as [string, string];
  const base = options.retryAfterBaseValue ?? 1000;
  const octokit = new GitHubClient({
    auth: options.token,
    ...(options.apiUrl ? { baseUrl: options.apiUrl.replace(/\/+$/, '') } : {}),
    userAgent: 'agent-runner',
    // Octokit logs request failures on its own; delivery reports them once, redacted.
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    retry: { retryAfterBaseValue: base },
    throttle: {
      retryAfterBaseValue: base,
      onRateLimit: (_after: number, _options: unknown, _client: unknown, retryCount: number) =>
        retryCount < RATE_LIMIT_RETRIES,
      onSecondaryRateLimit: (_after: number, _options: unknown, _client: unknown, retryCount: number) =>
        retryCount < RATE_LIMIT_RETRIES,
    },
  });
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw new ForgeError(gitHubFailure(error));
    }
  };
  return {
    kind: 'github',
    async findOpen(head, baseBranch) {
      const { data } = await call(() =>
        octokit.rest.pulls.list({ owner, repo, head: `${owner}:${head}`, base: baseBranch, state: 'open' }),
      );
      const pull = data.find((item) => item.head.ref === head);
      return pull ? changeRequestOf(pull) : null;
    },
    async create(head, baseBranch, content: ChangeRequestContent) {
      const { data } = await call(() =>
        octokit.rest.pulls.create({
          owner,
          repo,
          head,
          base: baseBranch,
          title: content.title,
          body: content.body,
          draft: content.draft,
        }),
      );
      return changeRequestOf(data);
    },
    async get(number) {
      const { data } = await call(() => octokit.rest.pulls.get({ owner, repo, pull_number: number }));
      return changeRequestOf(data);
    },
    async update(number, content: ChangeRequestContent) {
      const { data } = await call(() =>
        octokit.rest.pulls.update({
          owner,
          repo,
          pull_number: number,
          title: content.title,
          body: content.body,
        }),
      );
      const updated = changeRequestOf(data);
      if (updated.draft === content.draft || updated.state !== 'open') return updated;
      const mutation = content.draft ? 'convertPullRequestToDraft' : 'markPullRequestReadyForReview';
      const answer = await call(() =>
        octokit.graphql<Record<string, { pullRequest: { isDraft: boolean } }>>(
          DRAFT_MUTATIONS[content.draft ? 'draft' : 'ready'],
          { id: data.node_id },
        ),
      );
      return { ...updated, draft: answer[mutation]?.pullRequest.isDraft ?? updated.draft };
    },
  };
}
