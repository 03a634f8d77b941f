/**
 * A forge's event → what the server does: queue a task whose PRD is the issue, a follow-up from review on a
 * request agent-runner opened, or nothing. The decision itself is scripts/ci/forge-event.mjs (the same file the
 * GitHub Action runs before it installs anything); this module gives it its types and builds the links the
 * page shows from the forge's own address and the event's numbers, never from a payload's text.
 */
import {
  authorise,
  decide,
  githubAccess,
  gitlabAccess,
  normaliseGithub,
  normaliseGitlab,
  type EventOrigin,
  type ForgeAccess,
  type ForgeDecision,
  type ForgeEvent,
  type ForgeSettings,
} from '../../scripts/ci/forge-event.mjs';

export type {
  Forge,
  EventOrigin,
  ForgeAccess,
  ForgeDecision,
  ForgeEvent,
} from '../../scripts/ci/forge-event.mjs';
export { authorise, decide, githubAccess, gitlabAccess, normaliseGithub, normaliseGitlab };

/** What the server does with one event. */
export type Dispatch =
  | { kind: 'task'; prd: string; origin: EventOrigin; actor: string; originUrl: string }
  | {
      kind: 'followup';
      requestUrl: string;
      /** The review's or comment's own page (the request's page with its anchor). */
      originUrl: string;
      taskId: string;
      origin: EventOrigin;
      actor: string;
    }
  | { kind: 'ignore'; reason: string; refused: boolean; origin?: EventOrigin; actor?: string };

/** The forge's web address, from its API's: `https://api.github.com` → github.com, `https://HOST/api/v3` → HOST. */
export function webBase(forge: 'github' | 'gitlab', apiUrl: string | undefined): string {
  if (forge === 'gitlab')
    return (apiUrl ?? 'https://gitlab.com').replace(/\/+$/, '').replace(/\/api\/v4$/, '');
  const api = new URL(apiUrl ?? 'https://api.github.com');
  if (api.hostname === 'api.github.com') return 'https://github.com';
  return `${api.protocol}//${api.host}`;
}

/** The anchor of a comment on its page: GitHub names a review and a line comment apart, GitLab a note. */
function anchorOf(origin: EventOrigin): string {
  if (origin.forge === 'gitlab') return 'note_';
  if (origin.event === 'pull_request_review') return 'pullrequestreview-';
  if (origin.event === 'pull_request_review_comment') return 'discussion_r';
  return 'issuecomment-';
}

/** The web link of an issue or request of the event, built from numbers (a repository name is `owner/name`). */
export function originLink(origin: EventOrigin, apiUrl: string | undefined): string {
  const base = `${webBase(origin.forge, apiUrl)}/${origin.repository.split('/').map(encodeURIComponent).join('/')}`;
  const anchor = origin.commentId === undefined ? '' : `#${anchorOf(origin)}${Number(origin.commentId)}`;
  if (origin.request !== undefined)
    return origin.forge === 'github'
      ? `${base}/pull/${Number(origin.request)}${anchor}`
      : `${base}/-/merge_requests/${Number(origin.request)}${anchor}`;
  return origin.forge === 'github'
    ? `${base}/issues/${Number(origin.issue)}${anchor}`
    : `${base}/-/issues/${Number(origin.issue)}${anchor}`;
}

/** The decision for `event`, its instructing person's access checked, as the server acts on it. */
export async function dispatch(
  event: ForgeEvent,
  settings: ForgeSettings,
  access: ForgeAccess,
  apiUrl: string | undefined,
): Promise<Dispatch> {
  const decision: ForgeDecision = await authorise(decide(event, settings), access);
  if (decision.kind === 'task')
    return {
      kind: 'task',
      prd: decision.prd,
      origin: decision.origin,
      actor: decision.actor,
      originUrl: originLink(decision.origin, apiUrl),
    };
  if (decision.kind === 'followup' && decision.taskId !== undefined)
    return {
      kind: 'followup',
      requestUrl: originLink({ ...decision.origin, commentId: undefined }, apiUrl),
      originUrl: originLink(decision.origin, apiUrl),
      taskId: decision.taskId,
      origin: decision.origin,
      actor: decision.actor,
    };
  if (decision.kind === 'followup')
    return { kind: 'ignore', reason: 'the request is not one agent-runner opened', refused: false };
  return {
    kind: 'ignore',
    reason: decision.reason,
    refused: decision.refused === true,
    ...(decision.origin ? { origin: decision.origin } : {}),
  };
}
