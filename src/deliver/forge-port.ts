/**
 * What delivery needs of a forge (GitHub, GitLab): find the open pull/merge request of a branch, open one, and
 * update one. One adapter per forge implements it with that forge's official client; the delivery code knows
 * only this port, so a resumed task updates the request it opened instead of opening a second.
 */
import type { ForgeKind } from '../remote/remote-url.js';

/** A pull request (GitHub) or merge request (GitLab) as delivery sees it. */
export interface ChangeRequest {
  /** GitHub's pull request number, GitLab's merge request iid. */
  number: number;
  /** The page a person opens. */
  url: string;
  state: 'open' | 'closed' | 'merged';
  draft: boolean;
  /**
   * The branch it merges from (of the request's own repository, or of a fork: the same name may be a branch of
   * the base repository holding other code) and the branch it merges into.
   */
  head: string;
  base: string;
  /** The commit the request proposes, as the forge says (GitHub's `head.sha`, GitLab's `sha`); null if unsaid. */
  headSha: string | null;
}

/** An issue as a task reads it: its words are the forge user's (quoted input, never configuration). */
export interface ForgeIssue {
  number: number;
  title: string;
  body: string;
  /** The page a person opens, as the forge's API answers it. */
  url: string;
}

/** What delivery writes: the title from the PRD, the body from the evidence, a draft unless the task is COMPLETE. */
export interface ChangeRequestContent {
  title: string;
  body: string;
  draft: boolean;
}

/**
 * Why a forge call failed, in the words delivery reports: `auth` (401, the token is wrong or expired),
 * `permission` (403: the token lacks a permission, named in `permission`), `exists` (422: a request for this
 * branch exists already), `rate_limited` (429 or GitHub's secondary limit, after the client's own retries),
 * `unavailable` (5xx after retries), `unreachable` (no answer at all), `invalid` (anything else).
 */
export type ForgeFailureKind =
  'auth' | 'permission' | 'exists' | 'rate_limited' | 'unavailable' | 'unreachable' | 'invalid';

/** A failed forge call: its kind, the forge's own message, and for `permission` the permission it needs. */
export interface ForgeFailure {
  kind: ForgeFailureKind;
  status: number | null;
  message: string;
  permission?: string;
  /** Seconds the forge asked to wait, when that was more than delivery waits (`rate_limited`). */
  retryAfter?: number;
}

/** One forge, one repository on it, with the credentials already in the client. */
export interface ForgeClient {
  readonly kind: ForgeKind;
  /** The open request from `head` into `base`, or null when there is none. */
  findOpen(head: string, base: string): Promise<ChangeRequest | null>;
  create(head: string, base: string, content: ChangeRequestContent): Promise<ChangeRequest>;
  update(number: number, content: ChangeRequestContent): Promise<ChangeRequest>;
  /** The request numbered `number` (`verify` reads its branch from it). */
  get(number: number): Promise<ChangeRequest>;
  /** Issue `number` (GitHub's issue number, GitLab's issue iid): `run --from-issue`. */
  getIssue(number: number): Promise<ForgeIssue>;
  /** Writes `body` as a comment on issue `number` (GitHub's issue number, GitLab's issue iid). */
  commentOnIssue(number: number, body: string): Promise<void>;
}
