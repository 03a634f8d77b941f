/**
 * The GitHub adapter of the review port, with the same `@octokit/rest` client as delivery (retry, throttling):
 * a pull request's review comments (`GET /repos/{o}/{r}/pulls/{n}/comments`), its reviews (`.../reviews`) and
 * its conversation (`GET /repos/{o}/{r}/issues/{n}/comments`), every page; an author's write access from
 * `author_association`, confirmed with `GET /repos/{o}/{r}/collaborators/{user}/permission`; the `eyes`
 * reaction on a review comment or an issue comment; one issue comment as the reply.
 */
import { ForgeError } from './forge-error.js';
import { gitHubClient, type GitHubForgeOptions } from './github-forge.js';
import type { ReviewComment, ReviewForge } from './review-port.js';

/** The associations GitHub gives an author who may have write access; anyone else is not asked about. */
const WRITER_ASSOCIATIONS = new Set(['OWNER', 'MEMBER', 'COLLABORATOR']);
/** The permissions (and role names) of the collaborator permission API that allow pushing. */
const WRITE_PERMISSIONS = new Set(['admin', 'maintain', 'write']);

interface Authored {
  id: number;
  body?: string | null;
  user: { login: string } | null;
  author_association: string;
}

function commentOf(
  item: Authored,
  kind: ReviewComment['kind'],
  createdAt: string,
  location: ReviewComment['location'] = null,
): ReviewComment {
  return {
    id: String(item.id),
    kind,
    author: item.user?.login ?? '',
    authorId: null,
    association: item.author_association,
    body: item.body ?? '',
    createdAt,
    location,
  };
}

/** Review comments, review bodies and conversation comments of pull request `number` since `since`, oldest first. */
async function readComments(
  client: ReturnType<typeof gitHubClient>,
  number: number,
  since: string,
): Promise<ReviewComment[]> {
  const { octokit, owner, repo, call } = client;
  const after = (at: string | null | undefined) =>
    typeof at === 'string' && Date.parse(at) >= Date.parse(since);
  const [inline, reviews, conversation] = await Promise.all([
    call(() =>
      octokit.paginate(octokit.rest.pulls.listReviewComments, {
        owner,
        repo,
        pull_number: number,
        since,
        per_page: 100,
      }),
    ),
    call(() =>
      octokit.paginate(octokit.rest.pulls.listReviews, {
        owner,
        repo,
        pull_number: number,
        per_page: 100,
      }),
    ),
    call(() =>
      octokit.paginate(octokit.rest.issues.listComments, {
        owner,
        repo,
        issue_number: number,
        since,
        per_page: 100,
      }),
    ),
  ]);
  const found: ReviewComment[] = [
    ...inline
      .filter((item) => after(item.created_at))
      .map((item) =>
        commentOf(item, 'inline', item.created_at, {
          path: item.path,
          line: item.line ?? null,
          diffHunk: item.diff_hunk || null,
        }),
      ),
    ...reviews
      .filter((item) => after(item.submitted_at) && (item.body ?? '').trim() !== '')
      .map((item) => commentOf(item, 'review', item.submitted_at as string)),
    ...conversation
      .filter((item) => after(item.created_at))
      .map((item) => commentOf(item, 'conversation', item.created_at)),
  ];
  return found.sort((left, right) =>
    left.createdAt < right.createdAt ? -1 : left.createdAt > right.createdAt ? 1 : 0,
  );
}

/** A {@link ReviewForge} for one GitHub repository. */
export function createGitHubReview(options: GitHubForgeOptions): ReviewForge {
  const client = gitHubClient(options);
  const { octokit, owner, repo, call } = client;
  const writers = new Map<string, Promise<boolean>>();
  const permission = async (username: string): Promise<boolean> => {
    try {
      const { data } = await call(() =>
        octokit.rest.repos.getCollaboratorPermissionLevel({ owner, repo, username }),
      );
      return WRITE_PERMISSIONS.has(data.permission) || WRITE_PERMISSIONS.has(data.role_name);
    } catch (error) {
      // GitHub answers 404 for a user who is no collaborator (or no user at all).
      if (error instanceof ForgeError && error.failure.status === 404) return false;
      throw error;
    }
  };
  return {
    comments: (number, since) => readComments(client, number, since),
    async canWrite(comment) {
      if (comment.author === '' || !WRITER_ASSOCIATIONS.has(comment.association ?? '')) return false;
      let known = writers.get(comment.author);
      if (!known) {
        known = permission(comment.author);
        writers.set(comment.author, known);
      }
      return known;
    },
    async react(_number, comment) {
      const comment_id = Number(comment.id);
      if (comment.kind === 'inline')
        await call(() =>
          octokit.rest.reactions.createForPullRequestReviewComment({
            owner,
            repo,
            comment_id,
            content: 'eyes',
          }),
        );
      else if (comment.kind === 'conversation')
        await call(() =>
          octokit.rest.reactions.createForIssueComment({ owner, repo, comment_id, content: 'eyes' }),
        );
    },
    async reply(number, body) {
      const { data } = await call(() =>
        octokit.rest.issues.createComment({ owner, repo, issue_number: number, body }),
      );
      return data.html_url;
    },
  };
}
