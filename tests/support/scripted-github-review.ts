/**
 * The review side of the scripted GitHub server: a pull request's review comments, reviews and issue comments
 * (listed with `since`, every one built from the description's own example with the test's fields set), a
 * user's collaborator permission, the reactions on a review comment or an issue comment, and a new issue
 * comment. Each request and answer is validated against GitHub's published description like the pull request
 * operations (`describedOperation`), so the real Octokit calls agent-runner makes are checked as sent.
 */
import type { Json } from './scripted-api-server.js';
import { describedOperation, type OperationSpec } from './scripted-github-server.js';

export type GitHubReviewOperation =
  | 'reviewComments'
  | 'reviews'
  | 'issueComments'
  | 'permission'
  | 'reactIssueComment'
  | 'reactReviewComment'
  | 'createIssueComment';

let specs: Record<GitHubReviewOperation, OperationSpec> | null = null;

export function reviewOperations(): Record<GitHubReviewOperation, OperationSpec> {
  specs ??= {
    reviewComments: describedOperation(
      '/repos/{owner}/{repo}/pulls/{pull_number}/comments',
      'get',
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/comments$/,
    ),
    reviews: describedOperation(
      '/repos/{owner}/{repo}/pulls/{pull_number}/reviews',
      'get',
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/reviews$/,
    ),
    issueComments: describedOperation(
      '/repos/{owner}/{repo}/issues/{issue_number}/comments',
      'get',
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
    ),
    permission: describedOperation(
      '/repos/{owner}/{repo}/collaborators/{username}/permission',
      'get',
      /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)\/permission$/,
    ),
    reactIssueComment: describedOperation(
      '/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions',
      'post',
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)\/reactions$/,
    ),
    reactReviewComment: describedOperation(
      '/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions',
      'post',
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/comments\/(\d+)\/reactions$/,
    ),
    createIssueComment: describedOperation(
      '/repos/{owner}/{repo}/issues/{issue_number}/comments',
      'post',
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
    ),
  };
  return specs;
}

/** What a test scripts of a comment: who wrote it, with which association, what, when, where. */
export interface ScriptedComment {
  user: string;
  /** GitHub's author_association (OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE...). */
  association: string;
  body: string;
  /** ISO 8601; default now. */
  at?: string;
  /** An inline comment's file, line and hunk. */
  path?: string;
  line?: number;
  diffHunk?: string;
}

/** A reaction the server received: on which comment, of which kind. */
export interface ScriptedReaction {
  on: 'issue_comment' | 'review_comment';
  commentId: number;
  content: string;
}

/** The review state of a scripted GitHub: its comments, users' permissions, reactions received. */
export class GitHubReviewState {
  readonly reviewComments: Json[] = [];
  readonly reviews: Json[] = [];
  readonly issueComments: Json[] = [];
  readonly reactions: ScriptedReaction[] = [];
  /** A user's permission (admin, maintain, write, triage, read); a user not here is no collaborator (404). */
  readonly permissions = new Map<string, string>();
  private nextId = 7001;

  private userOf(example: Json, login: string): Json {
    return { ...(example.user as Json), login, id: login.length * 1000 + 1 };
  }

  /** An inline review comment on pull request `number`. */
  addReviewComment(number: number, comment: ScriptedComment): number {
    const id = this.nextId++;
    const at = comment.at ?? new Date().toISOString();
    const item = structuredClone(reviewOperations().reviewComments.example);
    Object.assign(item, {
      id,
      node_id: `PRRC_${id}`,
      pull_request_review_id: null,
      body: comment.body,
      path: comment.path ?? 'README.md',
      line: comment.line ?? null,
      original_line: comment.line ?? null,
      diff_hunk: comment.diffHunk ?? '@@ -1 +1 @@',
      user: this.userOf(reviewOperations().reviewComments.example, comment.user),
      author_association: comment.association,
      created_at: at,
      updated_at: at,
      html_url: `https://github.test/pull/${number}#discussion_r${id}`,
      pull_request_url: `https://github.test/pulls/${number}`,
    });
    this.reviewComments.push({ ...item, number });
    return id;
  }

  /** A submitted review's body on pull request `number`. */
  addReview(number: number, comment: ScriptedComment): number {
    const id = this.nextId++;
    const item = structuredClone(reviewOperations().reviews.example);
    Object.assign(item, {
      id,
      node_id: `PRR_${id}`,
      body: comment.body,
      state: 'COMMENTED',
      user: this.userOf(reviewOperations().reviews.example, comment.user),
      author_association: comment.association,
      submitted_at: comment.at ?? new Date().toISOString(),
    });
    this.reviews.push({ ...item, number });
    return id;
  }

  /** A conversation comment on pull request (issue) `number`. */
  addIssueComment(number: number, comment: ScriptedComment): number {
    const id = this.nextId++;
    const at = comment.at ?? new Date().toISOString();
    const item = structuredClone(reviewOperations().issueComments.example);
    Object.assign(item, {
      id,
      node_id: `IC_${id}`,
      body: comment.body,
      user: this.userOf(reviewOperations().issueComments.example, comment.user),
      author_association: comment.association,
      created_at: at,
      updated_at: at,
      html_url: `https://github.test/pull/${number}#issuecomment-${id}`,
    });
    this.issueComments.push({ ...item, number });
    return id;
  }

  /** The issue comments of pull request `number` agent-runner posted (through the API) after the test's own. */
  repliesOn(number: number): Json[] {
    return this.issueComments.filter((item) => item.number === number && item.posted === true);
  }

  /** The answer to one review operation; `match` is the operation's path match. */
  answer(
    operation: GitHubReviewOperation,
    match: RegExpExecArray,
    body: Json | null,
    url: URL,
  ): [number, unknown] {
    const number = Number(match[3]);
    const since = url.searchParams.get('since');
    const after = (item: Json, key: string) =>
      since === null || Date.parse(String(item[key])) >= Date.parse(since);
    const strip = (item: Json): Json => {
      const copy = { ...item };
      delete copy.number;
      delete copy.posted;
      return copy;
    };
    switch (operation) {
      case 'reviewComments':
        return [
          200,
          this.reviewComments
            .filter((item) => item.number === number && after(item, 'updated_at'))
            .map(strip),
        ];
      case 'reviews':
        return [200, this.reviews.filter((item) => item.number === number).map(strip)];
      case 'issueComments':
        return [
          200,
          this.issueComments.filter((item) => item.number === number && after(item, 'updated_at')).map(strip),
        ];
      case 'permission': {
        const login = decodeURIComponent(match[3] as string);
        const permission = this.permissions.get(login);
        if (permission === undefined)
          return [404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' }];
        const item = structuredClone(reviewOperations().permission.example);
        const legacy = permission === 'maintain' ? 'write' : permission === 'triage' ? 'read' : permission;
        Object.assign(item, {
          permission: legacy,
          role_name: permission,
          // GitHub's example user lacks the role_name its own schema requires.
          user: { ...(item.user as Json), login, role_name: permission },
        });
        return [200, item];
      }
      case 'reactIssueComment':
      case 'reactReviewComment': {
        const commentId = Number(match[3]);
        const list = operation === 'reactIssueComment' ? this.issueComments : this.reviewComments;
        if (!list.some((item) => item.id === commentId))
          return [404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' }];
        this.reactions.push({
          on: operation === 'reactIssueComment' ? 'issue_comment' : 'review_comment',
          commentId,
          content: String(body?.content),
        });
        const reaction = structuredClone(reviewOperations()[operation].example);
        Object.assign(reaction, { id: this.nextId++, content: body?.content });
        return [201, reaction];
      }
      case 'createIssueComment': {
        const id = this.addIssueComment(number, {
          user: 'agent-runner-bot',
          association: 'NONE',
          body: String(body?.body),
        });
        const created = this.issueComments.find((item) => item.id === id) as Json;
        created.posted = true;
        return [201, strip(created)];
      }
    }
  }
}

/** The review operation `method` and `pathname` name, with its path match; null when none does. */
export function reviewOperationOf(
  method: string,
  pathname: string,
): { operation: GitHubReviewOperation; spec: OperationSpec; match: RegExpExecArray } | null {
  for (const [operation, spec] of Object.entries(reviewOperations()) as [
    GitHubReviewOperation,
    OperationSpec,
  ][]) {
    const match = spec.method === method ? spec.path.exec(pathname) : null;
    if (match) return { operation, spec, match };
  }
  return null;
}
