/**
 * The GitLab adapter of the review port, with the same `@gitbeaker/rest` client as delivery: a merge request's
 * notes (`GET /projects/:id/merge_requests/:iid/notes`, every page; system notes left out; a `DiffNote` is an
 * inline comment with its file and new line), an author's access level from the members API
 * (`GET /projects/:id/members/all/:user_id`, inherited membership included; Developer (30) or higher writes),
 * the `eyes` award emoji on a note, one note as the reply.
 */
import { ForgeError } from './forge-error.js';
import { gitLabClient, type GitLabForgeOptions } from './gitlab-forge.js';
import type { ReviewComment, ReviewForge } from './review-port.js';

/** GitLab's Developer role: the lowest access level that may push to a branch. */
const DEVELOPER_ACCESS = 30;

interface NoteLike {
  id: number;
  body: string;
  system?: boolean;
  type?: string | null;
  created_at: string;
  author: { id: number; username: string };
  position?: { new_path?: string | null; old_path?: string | null; new_line?: number | null } | null;
}

function commentOf(note: NoteLike): ReviewComment {
  const inline = note.type === 'DiffNote' && note.position;
  return {
    id: String(note.id),
    kind: inline ? 'inline' : 'conversation',
    author: note.author.username,
    authorId: note.author.id,
    association: null,
    body: note.body,
    createdAt: note.created_at,
    location: inline
      ? {
          path: note.position?.new_path ?? note.position?.old_path ?? '',
          line: note.position?.new_line ?? null,
          diffHunk: null,
        }
      : null,
  };
}

/** A {@link ReviewForge} for one GitLab project. */
export function createGitLabReview(options: GitLabForgeOptions): ReviewForge {
  const { api, projectId, call } = gitLabClient(options);
  const writers = new Map<number, Promise<boolean>>();
  const access = async (userId: number): Promise<boolean> => {
    try {
      const member = await call(() => api.ProjectMembers.show(projectId, userId, { includeInherited: true }));
      return Number(member.access_level) >= DEVELOPER_ACCESS;
    } catch (error) {
      // 404: not a member of the project or of a group above it.
      if (error instanceof ForgeError && error.failure.status === 404) return false;
      throw error;
    }
  };
  return {
    async comments(number, since) {
      const notes = (await call(() =>
        api.MergeRequestNotes.all(projectId, number, { sort: 'asc', orderBy: 'created_at' }),
      )) as unknown as NoteLike[];
      return notes
        .filter((note) => !note.system && Date.parse(note.created_at) >= Date.parse(since))
        .map(commentOf)
        .sort((left, right) =>
          left.createdAt < right.createdAt ? -1 : left.createdAt > right.createdAt ? 1 : 0,
        );
    },
    async canWrite(comment) {
      if (comment.authorId === null) return false;
      let known = writers.get(comment.authorId);
      if (!known) {
        known = access(comment.authorId);
        writers.set(comment.authorId, known);
      }
      return known;
    },
    async react(number, comment) {
      await call(() => api.MergeRequestNoteAwardEmojis.award(projectId, number, Number(comment.id), 'eyes'));
    },
    async reply(number, body) {
      const note = (await call(() => api.MergeRequestNotes.create(projectId, number, body))) as unknown as {
        id: number;
      };
      const request = (await call(() => api.MergeRequests.show(projectId, number))) as unknown as {
        web_url: string;
      };
      return `${request.web_url}#note_${note.id}`;
    },
  };
}
