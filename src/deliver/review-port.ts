/**
 * What reading a pull/merge request's review needs of a forge: its comments since a time (inline review comments
 * with their place in the diff, review bodies, conversation comments), whether an author may write to the
 * repository, a reaction on a comment that was received, and one reply on the request. One adapter per forge,
 * with the same official client as delivery (github-review.ts, gitlab-review.ts).
 */

/**
 * `inline`: a comment on a line of the diff (GitHub's pull request review comment, GitLab's DiffNote);
 * `review`: the body of a submitted review (GitHub only); `conversation`: a comment on the request itself
 * (GitHub's issue comment, any other GitLab note).
 */
export type ReviewCommentKind = 'inline' | 'review' | 'conversation';

/** Where an inline comment sits: the file, its line in the new version (null: an outdated or file comment). */
export interface ReviewLocation {
  path: string;
  line: number | null;
  /** The diff hunk the comment was made on, as the forge gives it (GitHub); null when it gives none. */
  diffHunk: string | null;
}

/** One comment of a request's review, as the forge gave it (every text field is the commenter's: untrusted). */
export interface ReviewComment {
  /** The forge's id of the comment (a number, as text). */
  id: string;
  kind: ReviewCommentKind;
  /** The author's login (GitHub) or username (GitLab). */
  author: string;
  /** GitLab's numeric user id, which its members API takes; null on GitHub. */
  authorId: number | null;
  /**
   * GitHub's `author_association` (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE...); null on GitLab, which
   * has none.
   */
  association: string | null;
  body: string;
  /** When it was made (ISO 8601). */
  createdAt: string;
  location: ReviewLocation | null;
}

/** The review side of one forge repository, with the credentials already in the client. */
export interface ReviewForge {
  /** Every review comment of request `number` made at or after `since` (ISO 8601), oldest first. */
  comments(number: number, since: string): Promise<ReviewComment[]>;
  /**
   * Whether `comment`'s author may write to the repository: GitHub's collaborator permission admin, maintain or
   * write (asked only when `author_association` is OWNER, MEMBER or COLLABORATOR); GitLab's member access level
   * Developer (30) or higher, inherited membership included.
   */
  canWrite(comment: ReviewComment): Promise<boolean>;
  /** Marks `comment` as received: GitHub's `eyes` reaction, GitLab's `eyes` award emoji. Not on a review body. */
  react(number: number, comment: ReviewComment): Promise<void>;
  /** Posts `body` as one comment (GitHub's issue comment, GitLab's note) on request `number`; its page's URL. */
  reply(number: number, body: string): Promise<string>;
}
