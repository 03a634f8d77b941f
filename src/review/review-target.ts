/**
 * The pull/merge request a `followup --from-review` names by its page's URL: read through the forge's API (the
 * clients delivery uses), it must be open and come from a branch agent-runner opened it from
 * (`agent-runner/<ID>`), which names the task. Anything else is refused with one message that says why (exit 2).
 */
import { defaultForgeFactory, type ForgeFactory } from '../deliver/deliver-task.js';
import { ForgeError } from '../deliver/forge-error.js';
import type { ChangeRequest } from '../deliver/forge-port.js';
import { createGitHubReview } from '../deliver/github-review.js';
import { createGitLabReview } from '../deliver/gitlab-review.js';
import type { ReviewForge } from '../deliver/review-port.js';
import { EnvironmentError, UserError } from '../errors.js';
import { forgeToken } from '../remote/remote-credentials.js';
import {
  changeRequestApiUrl,
  parseChangeRequestUrl,
  type ChangeRequestUrl,
} from '../verify/change-request-target.js';

const TASK_BRANCH = 'agent-runner/';

export interface ReviewTarget {
  request: ChangeRequestUrl;
  changeRequest: ChangeRequest;
  /** The task the request's head branch `agent-runner/<ID>` names. */
  taskId: string;
  review: ReviewForge;
}

/** Makes the review side of a forge repository (tests reach a scripted server through `apiUrl`). */
export type ReviewForgeFactory = (input: Parameters<ForgeFactory>[0]) => ReviewForge;

export const defaultReviewForgeFactory: ReviewForgeFactory = (input) => {
  const options = {
    token: input.token,
    repository: input.repository,
    ...(input.apiUrl ? { apiUrl: input.apiUrl } : {}),
  };
  return input.forge === 'github' ? createGitHubReview(options) : createGitLabReview(options);
};

/** A forge failure while reading the request, in words with the fix. */
function readFailure(error: ForgeError, what: string, forge: string): Error {
  const { kind, status, message } = error.failure;
  const said = `${forge} answered ${status ?? 'nothing'}: ${message}`;
  if (kind === 'unreachable' || kind === 'unavailable' || kind === 'rate_limited')
    return new EnvironmentError('remote_failed', `Could not read ${what} (${said}). Try again later.`);
  return new UserError(
    'usage',
    `Could not read ${what} (${said}). Check the URL and ${forge === 'github' ? 'GH_TOKEN / GITHUB_TOKEN' : 'GITLAB_TOKEN'}.`,
  );
}

/** The request `url` names, its task, and its forge's review side; a UserError naming the fix otherwise. */
export async function openReviewTarget(
  url: string,
  env: NodeJS.ProcessEnv,
  options: { apiUrl?: string; forgeFactory?: ForgeFactory; reviewFactory?: ReviewForgeFactory } = {},
): Promise<ReviewTarget> {
  const request = parseChangeRequestUrl(url);
  if (!request)
    throw new UserError(
      'usage',
      `--from-review takes a pull request's page (https://HOST/OWNER/NAME/pull/N) or a merge request's ` +
        `(https://HOST/GROUP/NAME/-/merge_requests/N), not ${JSON.stringify(url.slice(0, 200))}.`,
    );
  const token = forgeToken(request.forge, env)?.token ?? '';
  if (token === '')
    throw new UserError(
      'usage',
      `Reading a review and answering it needs a token: set ${request.forge === 'github' ? 'GH_TOKEN (or GITHUB_TOKEN), with "Pull requests: write" and "Issues: write"' : 'GITLAB_TOKEN, with the `api` scope'}.`,
    );
  const input = {
    forge: request.forge,
    repository: request.repository,
    token,
    apiUrl: changeRequestApiUrl(request, options.apiUrl),
  };
  const what = `${request.forge === 'github' ? 'pull request' : 'merge request'} ${request.number} of ${request.repository}`;
  let changeRequest: ChangeRequest;
  try {
    changeRequest = await (options.forgeFactory ?? defaultForgeFactory)(input).get(request.number);
  } catch (error) {
    throw error instanceof ForgeError ? readFailure(error, what, request.forge) : error;
  }
  if (!changeRequest.head.startsWith(TASK_BRANCH) || changeRequest.head.length === TASK_BRANCH.length)
    throw new UserError(
      'usage',
      `The ${what} was not opened by agent-runner: it merges ${JSON.stringify(changeRequest.head.slice(0, 200))}, ` +
        `not a task branch ${TASK_BRANCH}<ID>. Give the URL of a request agent-runner opened (\`run --pr\`, \`deliver ID --pr\`).`,
    );
  if (changeRequest.state !== 'open')
    throw new UserError(
      'usage',
      `The ${what} is ${changeRequest.state}: a follow-up updates an open request. Reopen it, or start a new task.`,
    );
  return {
    request,
    changeRequest,
    taskId: changeRequest.head.slice(TASK_BRANCH.length),
    review: (options.reviewFactory ?? defaultReviewForgeFactory)(input),
  };
}
