/**
 * A scripted GitLab REST server (API v4) for the merge request calls delivery makes, written from GitLab's API
 * documentation (doc/api/merge_requests.md): list a project's merge requests by `source_branch`,
 * `target_branch` and `state`; create one (`source_branch`, `target_branch`, `title` required; 409 when an open
 * one exists for the source branch); edit one by its `iid`. The project is named by its URL-encoded path, the
 * token comes in `PRIVATE-TOKEN`. Requests outside what the documentation allows (an unknown attribute, a
 * missing required one, an unencoded project path) are recorded in `violations`; `assertValid()` fails the test.
 * Failures are scripted per operation: `failNext` (a status, a message, headers such as a load balancer's
 * `Retry-After`) and `rateLimitNext` (GitLab's own 429 of a throttled client: `Retry later` as plain text with
 * the `RateLimit-*` and `Retry-After` headers of GitLab's rate limit documentation).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { ScriptedApiServer, type Json } from './scripted-api-server.js';
import { GitLabReviewState, type GitLabReviewOperation } from './scripted-gitlab-review.js';
export type GitLabOperation = 'list' | 'create' | 'edit' | 'show';

/** The query parameters of GitLab's "Get single MR". */
const SHOW_PARAMETERS = new Set([
  'render_html',
  'include_diverged_commits_count',
  'include_rebase_in_progress',
]);

const LIST_PARAMETERS = new Set([
  'source_branch',
  'target_branch',
  'state',
  'page',
  'per_page',
  'pagination',
]);
const listStates = z.enum(['opened', 'closed', 'locked', 'merged', 'all']);
const createBody = z.strictObject({
  source_branch: z.string().min(1),
  target_branch: z.string().min(1),
  title: z.string().min(1),
  description: z.string().max(1_048_576).optional(),
});
const editBody = z.strictObject({
  title: z.string().min(1).optional(),
  description: z.string().max(1_048_576).optional(),
});

export interface GitLabCall {
  operation: GitLabOperation | GitLabReviewOperation | null;
  method: string;
  path: string;
  token: string | undefined;
  body: Json | null;
  status: number;
  /** When it arrived (`Date.now()`), to measure the waits between retries. */
  at: number;
}

interface ScriptedFailure {
  status: number;
  /** A JSON body's `message`, or a plain text body. */
  message: unknown;
  text?: string;
  headers: Record<string, string>;
}

export class ScriptedGitLabServer extends ScriptedApiServer<GitLabCall> {
  protected readonly described = 'GitLab API documentation';
  readonly mergeRequests = new Map<number, Json>();
  /** The merge requests' notes, members' access levels and award emoji. */
  readonly review = new GitLabReviewState();
  private readonly failures: Record<GitLabOperation, ScriptedFailure[]> = {
    list: [],
    create: [],
    edit: [],
    show: [],
  };
  private emptyLists = 0;

  /** Answers the next call of `operation` with `status`, `{message}` as its JSON body, and `headers`. */
  failNext(
    operation: GitLabOperation,
    status: number,
    message: unknown = `${status} scripted`,
    headers: Record<string, string> = {},
  ): void {
    this.failures[operation].push({ status, message, headers });
  }

  /**
   * Answers the next call of `operation` as GitLab's throttle does (the "Response headers" of GitLab's user and
   * IP rate limits documentation): 429, `Retry later` as plain text, the quota spent (`RateLimit-Remaining: 0`), the reset as Unix
   * time and as a date, and `Retry-After` in seconds.
   */
  rateLimitNext(operation: GitLabOperation, retryAfterSeconds: number): void {
    const reset = Math.ceil(Date.now() / 1000) + retryAfterSeconds;
    this.failures[operation].push({
      status: 429,
      message: null,
      text: 'Retry later\n',
      headers: {
        'RateLimit-Name': 'throttle_authenticated_api',
        'RateLimit-Limit': '60',
        'RateLimit-Observed': '61',
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': String(reset),
        'RateLimit-ResetTime': new Date(reset * 1000).toUTCString(),
        'Retry-After': String(retryAfterSeconds),
      },
    });
  }

  /**
   * Sets merge request `iid`'s head as GitLab reports it: the commit (`sha`) and, for a request from a fork,
   * the source project's id; the source branch's name stays.
   */
  setHead(iid: number, head: { sha: string; sourceProjectId?: number }): void {
    const request = this.mergeRequests.get(iid);
    if (!request) throw new Error(`no merge request ${iid}`);
    request.sha = head.sha;
    if (head.sourceProjectId !== undefined) request.source_project_id = head.sourceProjectId;
  }

  listEmptyOnce(): void {
    this.emptyLists += 1;
  }

  protected async handle(
    request: IncomingMessage,
    response: ServerResponse,
    body: Json | null,
  ): Promise<void> {
    const raw = request.url ?? '/';
    const url = new URL(raw, 'http://gitlab.test');
    // The project id stays encoded in the raw path (`acme%2Fapp`): GitLab reads `acme/app` as two segments.
    const match = /^\/api\/v4\/projects\/([^/]+)\/merge_requests(?:\/(\d+))?$/.exec(raw.split('?')[0] ?? '');
    const operation: GitLabOperation | null = !match
      ? null
      : request.method === 'GET' && !match[2]
        ? 'list'
        : request.method === 'POST' && !match[2]
          ? 'create'
          : request.method === 'PUT' && match[2]
            ? 'edit'
            : request.method === 'GET' && match[2]
              ? 'show'
              : null;
    const call: GitLabCall = {
      operation,
      method: request.method ?? '',
      path: raw,
      token: request.headers['private-token'] as string | undefined,
      body,
      status: 0,
      at: Date.now(),
    };
    this.calls.push(call);
    const send = (status: number, payload: unknown) => {
      call.status = status;
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(payload));
    };
    const reviewed = operation
      ? null
      : this.review.answer(request.method ?? '', raw.split('?')[0] ?? '', url, body, this.violations);
    if (reviewed) {
      call.operation = reviewed.operation;
      if (!call.token) this.violations.push(`${reviewed.operation}: no PRIVATE-TOKEN header`);
      send(reviewed.status, reviewed.payload);
      return;
    }
    if (!operation || !match) {
      this.violations.push(`${request.method} ${raw}: not a call delivery should make`);
      send(404, { message: '404 Not Found' });
      return;
    }
    if (!call.token) this.violations.push(`${operation}: no PRIVATE-TOKEN header`);
    const project = decodeURIComponent(match[1] as string);
    this.validate(operation, url, body);
    const failure = this.failures[operation].shift();
    if (failure) {
      call.status = failure.status;
      const text = failure.text ?? JSON.stringify({ message: failure.message });
      const type = failure.text === undefined ? 'application/json' : 'text/plain';
      response.writeHead(failure.status, { 'content-type': type, ...failure.headers });
      response.end(text);
      return;
    }
    if (operation === 'list') {
      if (this.emptyLists > 0) {
        this.emptyLists -= 1;
        send(200, []);
        return;
      }
      const source = url.searchParams.get('source_branch');
      const target = url.searchParams.get('target_branch');
      const state = url.searchParams.get('state') ?? 'all';
      send(
        200,
        [...this.mergeRequests.values()].filter(
          (item) =>
            (source === null || item.source_branch === source) &&
            (target === null || item.target_branch === target) &&
            (state === 'all' || item.state === state),
        ),
      );
      return;
    }
    if (operation === 'create') {
      const input = body ?? {};
      const open = [...this.mergeRequests.values()].find(
        (item) => item.state === 'opened' && item.source_branch === input.source_branch,
      );
      if (open) {
        send(409, {
          message: [`Another open merge request already exists for this source branch: !${String(open.iid)}`],
        });
        return;
      }
      const iid = this.mergeRequests.size + 1;
      const now = new Date().toISOString();
      const created: Json = {
        id: 5000 + iid,
        iid,
        project_id: 42,
        title: input.title,
        description: input.description ?? null,
        state: 'opened',
        created_at: now,
        updated_at: now,
        source_branch: input.source_branch,
        target_branch: input.target_branch,
        source_project_id: 42,
        target_project_id: 42,
        // GitLab names the source branch's head; this server knows no git: a test sets it (setHead).
        sha: null,
        draft: String(input.title).startsWith('Draft:'),
        work_in_progress: String(input.title).startsWith('Draft:'),
        web_url: `https://gitlab.test/${project}/-/merge_requests/${iid}`,
      };
      this.mergeRequests.set(iid, created);
      send(201, created);
      return;
    }
    const existing = this.mergeRequests.get(Number(match[2]));
    if (!existing) {
      send(404, { message: '404 Not found' });
      return;
    }
    if (operation === 'show') {
      send(200, existing);
      return;
    }
    if (body?.title !== undefined) {
      existing.title = body.title;
      existing.draft = String(body.title).startsWith('Draft:');
      existing.work_in_progress = existing.draft;
    }
    if (body?.description !== undefined) existing.description = body.description;
    existing.updated_at = new Date().toISOString();
    send(200, existing);
  }

  private validate(operation: GitLabOperation, url: URL, body: Json | null): void {
    if (operation === 'list') {
      for (const name of url.searchParams.keys())
        if (!LIST_PARAMETERS.has(name)) this.violations.push(`list: unknown parameter ${name}`);
      const state = url.searchParams.get('state');
      if (state !== null && !listStates.safeParse(state).success)
        this.violations.push(`list: state ${state}`);
      return;
    }
    if (operation === 'show') {
      // GitLab's "Get single MR" takes only optional rendering flags, and no body.
      for (const name of url.searchParams.keys())
        if (!SHOW_PARAMETERS.has(name)) this.violations.push(`show: unknown parameter ${name}`);
      if (body !== null) this.violations.push('show: a body on a GET');
      return;
    }
    const parsed = (operation === 'create' ? createBody : editBody).safeParse(body ?? {});
    if (!parsed.success) this.violations.push(`${operation}: ${parsed.error.message}`);
  }
}
