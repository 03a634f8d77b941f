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
import {
  MAX_RETRY_AFTER_SECONDS,
  RETRY_LATER_RETRIES,
  askedWaitSeconds,
  retryLater,
  type ForgeWaitHeaders,
} from './forge-retry.js';
import type { ChangeRequest, ChangeRequestContent, ForgeClient, ForgeFailure } from './forge-port.js';

/** Retries of a rate-limited call before it is reported. */
const RATE_LIMIT_RETRIES = 2;

type Headers = Record<string, string | number | undefined>;

/** What a failed Octokit call carries that the retry rule reads. */
interface FailedCall {
  status?: number;
  message?: string;
  response?: { headers?: Headers };
}

/** GitHub's primary or secondary rate limit: plugin-throttling's to wait out (it honours both). */
function throttled(failed: FailedCall): boolean {
  return (
    failed.response?.headers?.['x-ratelimit-remaining'] === '0' ||
    /\bsecondary rate\b/i.test(failed.message ?? '')
  );
}

/**
 * A call GitHub asks to retry later (a 429 or a 5xx) follows delivery's one rule ({@link retryLater}): retried
 * after the `retry-after` it names (else (n+1)² seconds) a few times, a wait over
 * {@link MAX_RETRY_AFTER_SECONDS} not waited. plugin-retry carries the retry out
 * (`octokit.retry.retryRequest`, its documented way to ask for one); its own rule is off (every status is in its
 * `doNotRetry`), since it retried a 429 after a second whatever GitHub asked. Registered before plugin-retry, so
 * this hook runs inside its retry loop; a rate limit GitHub names as such is plugin-throttling's.
 */
function retryLaterHook(octokit: Pick<Octokit, 'hook'>): void {
  octokit.hook.error('request', (error, options) => {
    const failed = error as FailedCall;
    if (throttled(failed)) throw error;
    const retryCount = (options.request as { retryCount?: number } | undefined)?.retryCount ?? 0;
    const decision = retryLater(
      failed.status ?? 0,
      askedWaitSeconds(waitHeaders(failed.response?.headers ?? {})),
      retryCount,
    );
    if (decision.action === 'fail') throw error;
    const retrying = octokit as unknown as {
      retry: { retryRequest(error: unknown, retries: number, retryAfter: number): Error };
    };
    throw retrying.retry.retryRequest(error, RETRY_LATER_RETRIES, decision.waitSeconds);
  });
}

/** plugin-retry decides nothing itself: every HTTP error status (see {@link retryLaterHook}). */
const EVERY_ERROR_STATUS = Array.from({ length: 200 }, (_, index) => 400 + index);

const GitHubClient = Octokit.plugin(retryLaterHook, retry, throttling);

/** GitHub's answer's headers about waiting, in the shared rule's words. */
function waitHeaders(headers: Headers): ForgeWaitHeaders {
  const value = (name: string) => (headers[name] === undefined ? undefined : String(headers[name]));
  return {
    retryAfter: value('retry-after'),
    remaining: value('x-ratelimit-remaining'),
    reset: value('x-ratelimit-reset'),
  };
}

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
  const asked = askedWaitSeconds(waitHeaders(headers));
  if (asked !== null && asked > MAX_RETRY_AFTER_SECONDS) failure.retryAfter = asked;
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

/** One GitHub repository's client (retry and throttling as above) and a call wrapper that reports by kind. */
export function gitHubClient(options: GitHubForgeOptions): {
  octokit: InstanceType<typeof GitHubClient>;
  owner: string;
  repo: string;
  call: <T>(run: () => Promise<T>) => Promise<T>;
} {
  const [owner, repo] = options.repository.split('/', 2) as [string, string];
  const base = options.retryAfterBaseValue ?? 1000;
  const octokit = new GitHubClient({
    auth: options.token,
    ...(options.apiUrl ? { baseUrl: options.apiUrl.replace(/\/+$/, '') } : {}),
    userAgent: 'agent-runner',
    // Octokit logs request failures on its own; delivery reports them once, redacted.
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    retry: { retryAfterBaseValue: base, doNotRetry: EVERY_ERROR_STATUS },
    throttle: {
      retryAfterBaseValue: base,
      // The wait GitHub names, a few times, unless it is longer than delivery waits.
      onRateLimit: (after: number, _options: unknown, _client: unknown, retryCount: number) =>
        after <= MAX_RETRY_AFTER_SECONDS && retryCount < RATE_LIMIT_RETRIES,
      onSecondaryRateLimit: (after: number, _options: unknown, _client: unknown, retryCount: number) =>
        after <= MAX_RETRY_AFTER_SECONDS && retryCount < RATE_LIMIT_RETRIES,
    },
  });
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw new ForgeError(gitHubFailure(error));
    }
  };
  return { octokit, owner, repo, call };
}

/** A {@link ForgeClient} for one GitHub repository. */
export function createGitHubForge(options: GitHubForgeOptions): ForgeClient {
  const { octokit, owner, repo, call } = gitHubClient(options);
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
    async getIssue(number) {
      const { data } = await call(() => octokit.rest.issues.get({ owner, repo, issue_number: number }));
      return { number: data.number, title: data.title, body: data.body ?? '', url: data.html_url };
    },
    async commentOnIssue(number, body) {
      await call(() => octokit.rest.issues.createComment({ owner, repo, issue_number: number, body }));
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
