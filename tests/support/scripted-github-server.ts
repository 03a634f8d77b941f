/**
 * A scripted GitHub REST server for the pull request calls delivery makes (list, create, update), so the real
 * `@octokit/rest` client with its retry and throttling plugins runs its real HTTP path. Every request (its body
 * and query) and every response the server sends is validated against GitHub's published OpenAPI description
 * (`@octokit/openapi`, api.github.com) with ajv: anything that does not match is recorded in `violations`, and
 * `assertValid()` fails the test. Pull requests are built from the description's own examples, with the fields
 * the test cares about set.
 *
 * Failures are scripted: `failNext(operation, status, options)` answers the next call of that operation with the
 * status (a 429 with `retry-after`, a 403 naming a permission, a 5xx...).
 *
 * GraphQL (`POST /graphql`), for what REST cannot do: `markPullRequestReadyForReview` and
 * `convertPullRequestToDraft`, written from GitHub's GraphQL reference (docs.github.com/graphql): the request is
 * `{query, variables, operationName}`, the mutation's input is `{pullRequestId: ID!, clientMutationId}` (the
 * pull request's REST `node_id`), the answer `{data: {<mutation>: {pullRequest: {...}}}}`; an unknown id,
 * field or mutation is `{errors: [...]}` with HTTP 200, as GitHub answers. `failGraphql(type, message)` scripts
 * the next one's error (FORBIDDEN, RATE_LIMITED...).
 */
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { ScriptedApiServer, type Json } from './scripted-api-server.js';
import {
  GitHubReviewState,
  reviewOperationOf,
  type GitHubReviewOperation,
} from './scripted-github-review.js';

type RestOperation = 'list' | 'create' | 'update' | 'get' | 'issue';
export type GitHubOperation = RestOperation | 'graphql';

export interface OperationSpec {
  method: string;
  path: RegExp;
  request: ValidateFunction | null;
  query: { name: string; validate: ValidateFunction }[];
  responses: Map<string, ValidateFunction>;
  error: ValidateFunction;
  example: Json;
}

interface Described {
  paths: Record<string, Record<string, Json>>;
}

let operations: Record<RestOperation, OperationSpec> | null = null;

function schemaOf(content: unknown): Json | null {
  const schema = ((content as Json | undefined)?.['application/json'] as Json | undefined)
    ?.schema as Json | null;
  return schema ? typedNullable(schema) : null;
}

/**
 * GitHub's description marks some `anyOf` schemas `nullable` without a `type` (the issue's `pull_request`,
 * `milestone`...), which ajv refuses to compile: such a node takes `null` as one more alternative instead.
 */
function typedNullable(schema: Json, seen = new Map<Json, Json>()): Json {
  const done = seen.get(schema);
  if (done) return done;
  const copy: Json = Array.isArray(schema) ? ([] as unknown as Json) : {};
  seen.set(schema, copy);
  for (const [key, value] of Object.entries(schema))
    (copy as Record<string, unknown>)[key] =
      value !== null && typeof value === 'object' ? typedNullable(value as Json, seen) : value;
  if (copy.nullable === true && copy.type === undefined) {
    delete copy.nullable;
    const alternatives = (copy.anyOf ?? copy.oneOf) as Json[] | undefined;
    if (alternatives) alternatives.push({ type: 'null' });
  }
  return copy;
}

let description: { described: Described; ajv: Ajv; basicError: ValidateFunction } | null = null;

/** GitHub's description and one ajv for it, loaded once per process. */
function githubDescription(): { described: Described; ajv: Ajv; basicError: ValidateFunction } {
  if (description) return description;
  const require = createRequire(import.meta.url);
  const described = require('@octokit/openapi/generated/api.github.com.deref.json') as Described;
  const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
  const ajv = addFormats(new Ajv({ strict: false, allErrors: true }));
  // GitHub's own format for `owner/name` (head_repo).
  ajv.addFormat('repo.nwo', /^[^/]+\/[^/]+$/);
  // GitHub's "Basic Error" (the create operation's 403): the body of every error an operation does not list.
  const createResponses = (described.paths['/repos/{owner}/{repo}/pulls']?.post as Json).responses as Json;
  const basicError = ajv.compile(schemaOf((createResponses['403'] as Json).content) as Json);
  description = { described, ajv, basicError };
  return description;
}

/**
 * One operation of GitHub's description (`route`, `method`) served at `path`: its request body's and string
 * query parameters' validators, each response's, and the first example of its success answer.
 */
export function describedOperation(route: string, method: string, path: RegExp): OperationSpec {
  const { described, ajv, basicError } = githubDescription();
  const operation = described.paths[route]?.[method] as Json;
  const responses = new Map<string, ValidateFunction>();
  let example: Json = {};
  for (const [status, response] of Object.entries(operation.responses as Record<string, Json>)) {
    const schema = schemaOf(response.content);
    if (!schema) continue;
    responses.set(status, ajv.compile(schema));
    if (status.startsWith('2')) {
      const media = (response.content as Json)['application/json'] as Json;
      const first = Object.values((media.examples as Record<string, Json> | undefined) ?? {})[0]?.value;
      const value = (first ?? media.example) as Json | Json[];
      example = structuredClone(Array.isArray(value) ? (value[0] as Json) : value);
    }
  }
  const parameters = (operation.parameters as Json[] | undefined) ?? [];
  return {
    method: method.toUpperCase(),
    path,
    request: schemaOf((operation.requestBody as Json | undefined)?.content)
      ? ajv.compile(schemaOf((operation.requestBody as Json).content) as Json)
      : null,
    query: parameters
      .filter((parameter) => parameter.in === 'query' && (parameter.schema as Json).type === 'string')
      .map((parameter) => ({
        name: parameter.name as string,
        validate: ajv.compile(parameter.schema as Json),
      })),
    responses,
    error: basicError,
    example,
  };
}

/** The pull request operations' validators, compiled once per process from GitHub's description. */
function loadOperations(): Record<RestOperation, OperationSpec> {
  if (operations) return operations;
  const build = describedOperation;
  operations = {
    list: build('/repos/{owner}/{repo}/pulls', 'get', /^\/repos\/([^/]+)\/([^/]+)\/pulls$/),
    create: build('/repos/{owner}/{repo}/pulls', 'post', /^\/repos\/([^/]+)\/([^/]+)\/pulls$/),
    update: build(
      '/repos/{owner}/{repo}/pulls/{pull_number}',
      'patch',
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
    ),
    get: build(
      '/repos/{owner}/{repo}/pulls/{pull_number}',
      'get',
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
    ),
    issue: build(
      '/repos/{owner}/{repo}/issues/{issue_number}',
      'get',
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)$/,
    ),
  };
  return operations;
}

/** One call the server received. */
export interface GitHubCall {
  operation: GitHubOperation | GitHubReviewOperation | null;
  method: string;
  path: string;
  authorization: string | undefined;
  body: Json | null;
  status: number;
  /** When it arrived (`Date.now()`), to measure the waits between retries. */
  at: number;
}

interface ScriptedFailure {
  status: number;
  body: Json;
  headers: Record<string, string>;
}

/** The draft mutations of GitHub's GraphQL API: each takes `{pullRequestId}` and makes `isDraft` this. */
const DRAFT_MUTATIONS: Readonly<Record<string, boolean>> = {
  markPullRequestReadyForReview: false,
  convertPullRequestToDraft: true,
};
/** The PullRequest fields a draft mutation's answer may select here (a subset of GitHub's PullRequest type). */
const PULL_FIELDS = new Set(['id', 'number', 'isDraft', 'url', 'title', 'state']);

export class ScriptedGitHubServer extends ScriptedApiServer<GitHubCall> {
  protected readonly described = 'GitHub API description';
  /** The pull requests on the server, by number. */
  readonly pulls = new Map<number, Json>();
  /** The pull requests' review comments, reviews, conversation, collaborators' permissions and reactions. */
  readonly review = new GitHubReviewState();
  private readonly failures: Record<GitHubOperation, ScriptedFailure[]> = {
    list: [],
    create: [],
    update: [],
    get: [],
    issue: [],
    graphql: [],
  };
  /** The issues on the server, by number (GitHub's example issue with the fields a test sets). */
  readonly issues = new Map<number, { title: string; body: string | null }>();
  private readonly graphqlFailures: { type: string; message: string }[] = [];
  private nextNumber = 1;
  private emptyLists = 0;

  override async start(): Promise<this> {
    loadOperations();
    return super.start();
  }

  /** Answers the next call of `operation` with `status` (and `headers`, `message`). */
  failNext(
    operation: GitHubOperation,
    status: number,
    options: { message?: string; headers?: Record<string, string> } = {},
  ): void {
    const body: Json = {
      message: options.message ?? `scripted ${status}`,
      documentation_url: 'https://docs.github.com/rest',
      ...(status === 422
        ? { errors: [{ resource: 'PullRequest', code: 'custom', message: options.message ?? '' }] }
        : {}),
    };
    this.failures[operation].push({ status, body, headers: options.headers ?? {} });
  }

  /** Answers the next list with no pull request (a request opened meanwhile: the race of two deliveries). */
  listEmptyOnce(): void {
    this.emptyLists += 1;
  }

  /**
   * Sets pull request `number`'s head as GitHub reports it: the commit (`head.sha`) and, for a request from a
   * fork, the fork's repository (`head.repo`, `head.label`); the branch name stays.
   */
  setHead(number: number, head: { sha: string; repository?: string }): void {
    const pull = this.pulls.get(number);
    if (!pull) throw new Error(`no pull request ${number}`);
    const current = pull.head as Json;
    const next: Json = { ...current, sha: head.sha };
    if (head.repository) {
      const [owner = '', name = ''] = head.repository.split('/');
      const repo = current.repo as Json;
      next.repo = {
        ...repo,
        name,
        full_name: head.repository,
        owner: { ...(repo.owner as Json), login: owner },
        fork: true,
      };
      next.label = `${owner}:${String(current.ref)}`;
    }
    pull.head = next;
  }

  /** Answers the next GraphQL request with one error of `type` (GitHub's error types: FORBIDDEN, NOT_FOUND...). */
  failGraphql(type: string, message = `scripted ${type}`): void {
    this.graphqlFailures.push({ type, message });
  }

  protected async handle(
    request: IncomingMessage,
    response: ServerResponse,
    body: Json | null,
  ): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://github.test');
    const specs = loadOperations();
    const entry = (Object.entries(specs) as [RestOperation, OperationSpec][]).find(
      ([, spec]) => spec.method === request.method && spec.path.test(url.pathname),
    );
    const graphql = request.method === 'POST' && url.pathname === '/graphql';
    const call: GitHubCall = {
      operation: graphql ? 'graphql' : (entry?.[0] ?? null),
      method: request.method ?? '',
      path: `${url.pathname}${url.search}`,
      authorization: request.headers.authorization,
      body,
      status: 0,
      at: Date.now(),
    };
    this.calls.push(call);
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      call.status = status;
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
      response.end(JSON.stringify(payload));
    };
    if (graphql) {
      this.graphql(call, body, send);
      return;
    }
    const reviewed = entry ? null : reviewOperationOf(request.method ?? '', url.pathname);
    if (reviewed) {
      call.operation = reviewed.operation;
      this.validateRequest(reviewed.operation, reviewed.spec, body, url);
      const [status, payload] = this.review.answer(reviewed.operation, reviewed.match, body, url);
      this.check(
        reviewed.spec.responses.get(String(status)) ?? reviewed.spec.error,
        payload,
        `${reviewed.operation} response ${status}`,
      );
      send(status, payload);
      return;
    }
    if (!entry) {
      this.violations.push(`${request.method} ${url.pathname}: not an operation delivery should call`);
      send(404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' });
      return;
    }
    const [operation, spec] = entry;
    this.validateRequest(operation, spec, body, url);
    const failure = this.failures[operation].shift();
    if (failure) {
      const validate = spec.responses.get(String(failure.status)) ?? spec.error;
      this.check(validate, failure.body, `${operation} response ${failure.status}`);
      send(failure.status, failure.body, failure.headers);
      return;
    }
    const [status, payload] = this.answer(operation, spec, body, url);
    const validate = spec.responses.get(String(status)) ?? spec.error;
    this.check(validate, payload, `${operation} response ${status}`);
    send(status, payload);
  }

  /** One GraphQL request: a draft mutation of a pull request known by its `node_id`, or GitHub's errors. */
  private graphql(
    call: GitHubCall,
    body: Json | null,
    send: (status: number, payload: unknown, headers?: Record<string, string>) => void,
  ): void {
    if (!call.authorization) {
      send(401, {
        message: 'This endpoint requires you to be authenticated.',
        documentation_url:
          'https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql',
      });
      return;
    }
    const request = body ?? {};
    for (const key of Object.keys(request))
      if (!['query', 'variables', 'operationName'].includes(key))
        this.violations.push(`graphql request: ${key} is not a field of a GraphQL request`);
    const query = typeof request.query === 'string' ? request.query : '';
    const variables = (request.variables ?? {}) as Json;
    const failure = this.graphqlFailures.shift();
    if (failure) {
      send(200, { data: null, errors: [{ type: failure.type, path: [], message: failure.message }] });
      return;
    }
    // One mutation per request: `mutation [Name] [($id: ID!)] { field(input: {pullRequestId: $id | "..."}) { pullRequest { ... } } }`.
    const parsed =
      /^\s*mutation\b[^{]*\{\s*(\w+)\s*\(\s*input\s*:\s*\{\s*pullRequestId\s*:\s*(\$\w+|"[^"]*")\s*\}\s*\)\s*\{\s*pullRequest\s*\{([^{}]*)\}\s*\}\s*\}\s*$/.exec(
        query,
      );
    if (!parsed || !((parsed[1] as string) in DRAFT_MUTATIONS)) {
      this.violations.push(`graphql: not a draft mutation delivery should send: ${query.slice(0, 200)}`);
      send(200, {
        errors: [{ message: 'Parse error or unknown field', locations: [{ line: 1, column: 1 }] }],
      });
      return;
    }
    const [, field, argument, selection] = parsed as unknown as [string, string, string, string];
    const fields = selection.split(/[\s,]+/).filter(Boolean);
    const unknown = fields.find((name) => !PULL_FIELDS.has(name));
    if (unknown) {
      this.violations.push(`graphql: ${unknown} is not a PullRequest field this server answers`);
      send(200, {
        errors: [
          {
            path: ['mutation', field, 'pullRequest', unknown],
            extensions: { code: 'undefinedField', typeName: 'PullRequest', fieldName: unknown },
            message: `Field '${unknown}' doesn't exist on type 'PullRequest'`,
          },
        ],
      });
      return;
    }
    const id = argument.startsWith('$') ? variables[argument.slice(1)] : argument.slice(1, -1);
    if (typeof id !== 'string') this.violations.push(`graphql: ${argument} is not given as an ID (string)`);
    const pull = [...this.pulls.values()].find((item) => item.node_id === id);
    if (!pull) {
      send(200, {
        data: { [field]: null },
        errors: [
          {
            type: 'NOT_FOUND',
            path: [field],
            locations: [{ line: 2, column: 3 }],
            message: `Could not resolve to a node with the global id of '${String(id)}'`,
          },
        ],
      });
      return;
    }
    pull.draft = DRAFT_MUTATIONS[field];
    pull.updated_at = new Date().toISOString();
    const values: Json = {
      id: pull.node_id,
      number: pull.number,
      isDraft: pull.draft,
      url: pull.html_url,
      title: pull.title,
      state: String(pull.state).toUpperCase(),
    };
    send(200, {
      data: { [field]: { pullRequest: Object.fromEntries(fields.map((name) => [name, values[name]])) } },
    });
  }

  private validateRequest(operation: string, spec: OperationSpec, body: Json | null, url: URL): void {
    if (spec.request) this.check(spec.request, body ?? {}, `${operation} request body`);
    for (const parameter of spec.query) {
      const value = url.searchParams.get(parameter.name);
      if (value !== null) this.check(parameter.validate, value, `${operation} query ${parameter.name}`);
    }
    for (const name of url.searchParams.keys())
      if (!spec.query.some((parameter) => parameter.name === name) && !['per_page', 'page'].includes(name))
        this.violations.push(`${operation} query ${name}: not a parameter of the operation`);
  }

  private check(validate: ValidateFunction, value: unknown, where: string): void {
    if (!validate(value)) this.violations.push(`${where}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
  }

  private answer(
    operation: RestOperation,
    spec: OperationSpec,
    body: Json | null,
    url: URL,
  ): [number, unknown] {
    const [, owner, repo, number] = spec.path.exec(url.pathname) as RegExpExecArray;
    if (operation === 'list' && this.emptyLists > 0) {
      this.emptyLists -= 1;
      return [200, []];
    }
    if (operation === 'list') {
      const head = url.searchParams.get('head');
      const base = url.searchParams.get('base');
      const state = url.searchParams.get('state') ?? 'open';
      const listed = [...this.pulls.values()].filter(
        (pull) =>
          (head === null || `${owner}:${(pull.head as Json).ref as string}` === head) &&
          (base === null || (pull.base as Json).ref === base) &&
          (state === 'all' || pull.state === state),
      );
      return [200, listed.map((pull) => this.simple(pull))];
    }
    if (operation === 'create') {
      const input = body ?? {};
      const exists = [...this.pulls.values()].some(
        (pull) =>
          pull.state === 'open' &&
          (pull.head as Json).ref === input.head &&
          (pull.base as Json).ref === input.base,
      );
      if (exists) {
        return [
          422,
          {
            message: 'Validation Failed',
            documentation_url: 'https://docs.github.com/rest/pulls/pulls#create-a-pull-request',
            errors: [
              {
                resource: 'PullRequest',
                code: 'custom',
                message: `A pull request already exists for ${owner}:${String(input.head)}.`,
              },
            ],
          },
        ];
      }
      const created = this.pullOf(spec.example, owner as string, repo as string, this.nextNumber++, input);
      this.pulls.set(created.number as number, created);
      return [201, created];
    }
    if (operation === 'issue') {
      const issue = this.issues.get(Number(number));
      if (!issue) return [404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' }];
      // This operation's example is wrapped with its breaking-change notes: `{value, x-github-breaking-changes}`.
      const example = spec.example['x-github-breaking-changes'] ? (spec.example.value as Json) : spec.example;
      const answer = structuredClone(example);
      Object.assign(answer, {
        ...issue,
        number: Number(number),
        html_url: `https://github.test/${owner}/${repo}/issues/${number}`,
      });
      return [200, answer];
    }
    const pull = this.pulls.get(Number(number));
    if (!pull) return [404, { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' }];
    if (operation === 'get') return [200, pull];
    if (body?.title !== undefined) pull.title = body.title;
    if (body?.body !== undefined) pull.body = body.body;
    pull.updated_at = new Date().toISOString();
    return [200, pull];
  }

  /** A full pull request: GitHub's own example with this one's fields. */
  private pullOf(example: Json, owner: string, repo: string, number: number, input: Json): Json {
    const pull = structuredClone(example);
    const html = `https://github.test/${owner}/${repo}/pull/${number}`;
    Object.assign(pull, {
      number,
      id: 1000 + number,
      node_id: `PR_scripted${number}`,
      html_url: html,
      url: `${this.url}/repos/${owner}/${repo}/pulls/${number}`,
      state: 'open',
      title: input.title,
      body: input.body ?? null,
      draft: Boolean(input.draft),
      merged: false,
      merged_at: null,
      closed_at: null,
      // GitHub's example lists a team without the `type` its own schema requires.
      requested_teams: [],
    });
    pull.head = { ...(pull.head as Json), ref: input.head, label: `${owner}:${String(input.head)}` };
    pull.base = { ...(pull.base as Json), ref: input.base, label: `${owner}:${String(input.base)}` };
    return pull;
  }

  /** The list form of a pull request (pull-request-simple): the full one without the fields it lacks. */
  private simple(pull: Json): Json {
    const copy = structuredClone(pull);
    for (const key of [
      'merged',
      'mergeable',
      'rebaseable',
      'mergeable_state',
      'merged_by',
      'comments',
      'review_comments',
      'maintainer_can_modify',
      'commits',
      'additions',
      'deletions',
      'changed_files',
    ])
      delete copy[key];
    return copy;
  }
}
