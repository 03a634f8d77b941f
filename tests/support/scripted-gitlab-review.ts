/**
 * The review side of the scripted GitLab server, from GitLab's API documentation: a merge request's notes
 * (doc/api/notes.md: `GET /projects/:id/merge_requests/:iid/notes` with `sort` and `order_by`; a diff note has
 * `type: "DiffNote"` and a `position` with `new_path` and `new_line`; `system` notes are GitLab's own), a new
 * note (`body` required), an award emoji on a note (doc/api/emoji_reactions.md: `name` required), and a
 * project member with inherited membership (doc/api/members.md: `GET /projects/:id/members/all/:user_id`, 404
 * for a user who is no member; `GET /projects/:id/members/all?query=` lists the members whose name or username
 * holds the text). Anything outside that is a violation the test fails on.
 */
import { z } from 'zod';
import type { Json } from './scripted-api-server.js';

export type GitLabReviewOperation = 'notes' | 'createNote' | 'awardEmoji' | 'member' | 'members';

const NOTES_PARAMETERS = new Set(['sort', 'order_by', 'page', 'per_page', 'pagination']);
/** The query parameters of "List all members of a group or project including inherited and invited members". */
const MEMBERS_PARAMETERS = new Set(['query', 'user_ids', 'show_seat_info', 'state', 'page', 'per_page']);
const noteBody = z.strictObject({ body: z.string().min(1).max(1_000_000), internal: z.boolean().optional() });
const awardBody = z.strictObject({ name: z.string().min(1) });

/** What a test scripts of a note. */
export interface ScriptedNote {
  username: string;
  body: string;
  at?: string;
  /** A diff note's file and new line. */
  path?: string;
  line?: number;
  system?: boolean;
}

export class GitLabReviewState {
  /** Notes by merge request iid. */
  readonly notes: Json[] = [];
  readonly awards: { noteId: number; name: string; iid: number }[] = [];
  /** A user's access level in the project (10 guest, 20 reporter, 30 developer, 40 maintainer, 50 owner). */
  readonly accessLevels = new Map<string, number>();
  private readonly userIds = new Map<string, number>();
  private nextId = 9001;

  private userId(username: string): number {
    let id = this.userIds.get(username);
    if (id === undefined) {
      id = 100 + this.userIds.size;
      this.userIds.set(username, id);
    }
    return id;
  }

  addNote(iid: number, note: ScriptedNote, posted = false): Json {
    const at = note.at ?? new Date().toISOString();
    const diff = note.path !== undefined;
    const item: Json = {
      id: this.nextId++,
      type: diff ? 'DiffNote' : null,
      body: note.body,
      attachment: null,
      author: {
        id: this.userId(note.username),
        username: note.username,
        name: note.username,
        state: 'active',
        web_url: `https://gitlab.test/${note.username}`,
      },
      created_at: at,
      updated_at: at,
      system: Boolean(note.system),
      noteable_id: 5000 + iid,
      noteable_type: 'MergeRequest',
      noteable_iid: iid,
      resolvable: diff,
      confidential: false,
      internal: false,
      ...(diff
        ? {
            position: {
              base_sha: 'a'.repeat(40),
              start_sha: 'a'.repeat(40),
              head_sha: 'b'.repeat(40),
              old_path: note.path,
              new_path: note.path,
              position_type: 'text',
              old_line: null,
              new_line: note.line ?? null,
            },
          }
        : {}),
    };
    this.notes.push({ ...item, posted });
    return item;
  }

  /** The notes agent-runner posted on merge request `iid`. */
  repliesOn(iid: number): Json[] {
    return this.notes.filter((note) => note.noteable_iid === iid && note.posted === true);
  }

  /** The operation a request names, with its answer; null when it is none of these. */
  answer(
    method: string,
    path: string,
    url: URL,
    body: Json | null,
    violations: string[],
  ): { operation: GitLabReviewOperation; status: number; payload: unknown } | null {
    const notes = /^\/api\/v4\/projects\/[^/]+\/merge_requests\/(\d+)\/notes$/.exec(path);
    const award = /^\/api\/v4\/projects\/[^/]+\/merge_requests\/(\d+)\/notes\/(\d+)\/award_emoji$/.exec(path);
    const member = /^\/api\/v4\/projects\/[^/]+\/members\/all\/(\d+)$/.exec(path);
    const strip = (note: Json): Json => {
      const copy = { ...note };
      delete copy.posted;
      return copy;
    };
    if (notes && method === 'GET') {
      for (const name of url.searchParams.keys())
        if (!NOTES_PARAMETERS.has(name)) violations.push(`notes: unknown parameter ${name}`);
      const iid = Number(notes[1]);
      const listed = this.notes.filter((note) => note.noteable_iid === iid).map(strip);
      if (url.searchParams.get('sort') === 'asc')
        listed.sort(
          (left, right) => Date.parse(String(left.created_at)) - Date.parse(String(right.created_at)),
        );
      return { operation: 'notes', status: 200, payload: listed };
    }
    if (notes && method === 'POST') {
      const parsed = noteBody.safeParse(body ?? {});
      if (!parsed.success) violations.push(`createNote: ${parsed.error.message}`);
      const created = this.addNote(
        Number(notes[1]),
        { username: 'agent-runner-bot', body: String(body?.body) },
        true,
      );
      return { operation: 'createNote', status: 201, payload: created };
    }
    if (award && method === 'POST') {
      const parsed = awardBody.safeParse(body ?? {});
      if (!parsed.success) violations.push(`awardEmoji: ${parsed.error.message}`);
      const noteId = Number(award[2]);
      if (!this.notes.some((note) => note.id === noteId))
        return { operation: 'awardEmoji', status: 404, payload: { message: '404 Not found' } };
      this.awards.push({ noteId, name: String(body?.name), iid: Number(award[1]) });
      return {
        operation: 'awardEmoji',
        status: 201,
        payload: { id: this.nextId++, name: body?.name, awardable_id: noteId, awardable_type: 'Note' },
      };
    }
    if (/^\/api\/v4\/projects\/[^/]+\/members\/all$/.test(path) && method === 'GET') {
      for (const name of url.searchParams.keys())
        if (!MEMBERS_PARAMETERS.has(name)) violations.push(`members: unknown parameter ${name}`);
      const query = (url.searchParams.get('query') ?? '').toLowerCase();
      const listed = [...this.accessLevels]
        .filter(([username]) => username.toLowerCase().includes(query))
        .map(([username, level]) => ({
          id: this.userId(username),
          username,
          name: username,
          state: 'active',
          access_level: level,
          expires_at: null,
        }));
      return { operation: 'members', status: 200, payload: listed };
    }
    if (member && method === 'GET') {
      const id = Number(member[1]);
      const username = [...this.userIds].find(([, known]) => known === id)?.[0];
      const level = username === undefined ? undefined : this.accessLevels.get(username);
      if (level === undefined)
        return { operation: 'member', status: 404, payload: { message: '404 Not found' } };
      return {
        operation: 'member',
        status: 200,
        payload: { id, username, name: username, state: 'active', access_level: level, expires_at: null },
      };
    }
    return null;
  }
}
