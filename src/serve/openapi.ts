/**
 * The OpenAPI 3.1 document of the server's API, made from the zod schemas that check its requests (zod's own
 * JSON Schema output), so what is documented is what is accepted; its paths and each one's role
 * (`x-required-role`) come from the route table (api-routes.ts), the same one the server registers from.
 */
import * as z from 'zod';
import { ROLES } from '../identity/roles.js';
import { VERSION } from '../version.js';
import { API_ROUTES, openApiPath, type ApiRouteKey } from './api-routes.js';
import {
  answerSchema,
  createTokenSchema,
  followupSchema,
  resumeSchema,
  startTaskSchema,
} from './api-schemas.js';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from './task-list-query.js';

const json = (schema: z.ZodType) => ({
  'application/json': { schema: z.toJSONSchema(schema, { io: 'input' }) },
});
const errorBody = {
  'application/json': {
    schema: {
      type: 'object',
      properties: {
        error: {
          type: 'object',
          properties: { code: { type: 'string' }, message: { type: 'string' }, field: { type: 'string' } },
          required: ['code', 'message'],
        },
      },
    },
  },
};
const taskId = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const query = (name: string, schema: Record<string, unknown>, description: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  description,
});
const tokenName = { name: 'name', in: 'path', required: true, schema: { type: 'string' } };
const errors = {
  '400': { description: 'A bad body or task id (the field is named)', content: errorBody },
  '401': { description: 'The token is missing, unknown or revoked', content: errorBody },
  '403': { description: "The token's role is below the route's x-required-role", content: errorBody },
  '404': { description: 'No such task', content: errorBody },
};
const notRunning = {
  '409': {
    description: 'Not run by this server, or a fleet task that is queued or ended',
    content: errorBody,
  },
};

type Operation = { summary: string } & Record<string, unknown>;

/** What each route of the table does (its role and path are the table's). */
const OPERATIONS: Record<ApiRouteKey, Operation> = {
  'GET /api/tasks': {
    summary:
      "A page of the repository's tasks (state, title, branch, times, runs, usage, cost), newest first (created, then id)",
    parameters: [
      query(
        'limit',
        { type: 'integer', minimum: 1, maximum: LIST_LIMIT_MAX, default: LIST_LIMIT_DEFAULT },
        'Tasks per page',
      ),
      query(
        'cursor',
        { type: 'string' },
        'Where the page starts: the `next` of the page before (opaque; it holds while tasks are created)',
      ),
      query(
        'state',
        { type: 'array', items: { type: 'string' } },
        'Only tasks in any of these states (repeat it, or comma-separated)',
      ),
      query(
        'node',
        { type: 'array', items: { type: 'string' } },
        "Only tasks of any of these nodes (a fleet's list; this server's own tasks run on no node)",
      ),
    ],
    responses: {
      '200': {
        description:
          '`{"tasks": [...], "next": cursor | null, "more": boolean}`; on a node of a fleet also `"fleet": [...]` (the page of the fleet\'s tasks, with their nodes; null while the control database is away)',
      },
      ...errors,
      '400': {
        description: 'A bad limit, cursor, state or node (the parameter is named)',
        content: errorBody,
      },
    },
  },
  'POST /api/tasks': {
    summary: 'Start a task; answers its id at once (the task goes on in the server)',
    requestBody: { required: true, content: json(startTaskSchema) },
    responses: {
      '202': { description: '{"taskId": ...}' },
      ...errors,
      '400': {
        description:
          'A bad body (the field is named); `repository_invalid` on a pure node of a fleet without `repo`',
        content: errorBody,
      },
    },
  },
  'GET /api/tasks/:id': {
    summary: 'One task: its board line, plan, run records, summary, and who acted on it (`audit`)',
    parameters: [taskId],
    responses: { '200': { description: 'The task' }, ...errors },
  },
  'GET /api/tasks/:id/events': {
    summary:
      "The task's journal as Server-Sent Events (`journal` events, each id a position in the journal), then live; resumes after Last-Event-ID without reading what came before; ends with an `end` event",
    parameters: [
      taskId,
      {
        name: 'Last-Event-ID',
        in: 'header',
        required: false,
        schema: { type: 'string' },
        description: 'The id of the last event received: the stream goes on after it',
      },
      query('after', { type: 'string' }, 'As Last-Event-ID, for a client that cannot set the header'),
      query('follow', { type: 'string', enum: ['0', '1'] }, '0: only the events written so far'),
    ],
    responses: {
      '200': { description: 'text/event-stream' },
      ...errors,
      '400': {
        description:
          'A bad task id, or a Last-Event-ID that is no position of this task (garbage, past the end, inside a line, of another task)',
        content: errorBody,
      },
    },
  },
  'GET /api/tasks/:id/diff': {
    summary: "The task branch's diff since its base (text)",
    parameters: [taskId],
    responses: { '200': { description: 'text/plain' }, ...errors },
  },
  'GET /api/tasks/:id/note': {
    summary: "The task's note (Markdown)",
    parameters: [taskId],
    responses: { '200': { description: 'text/markdown' }, ...errors },
  },
  'POST /api/tasks/:id/answer': {
    summary: "Answer the task's ask_human question",
    parameters: [taskId],
    requestBody: { required: true, content: json(answerSchema) },
    responses: {
      '202': { description: "Answered (another node's task: sent to its node, `node` names it)" },
      ...errors,
      ...notRunning,
    },
  },
  'POST /api/tasks/:id/stop': {
    summary: 'Stop the task as Ctrl-C does (its work saved, its note written); again to hurry',
    parameters: [taskId],
    responses: {
      '202': { description: 'Stopping (another node\'s task: `"stop": "requested"`, `node` names it)' },
      ...errors,
      ...notRunning,
    },
  },
  'POST /api/tasks/:id/resume': {
    summary:
      'Resume the task from its journal (a stale one, or one that ended NEEDS_REVIEW or FAILED), as `agent-runner resume`',
    parameters: [taskId],
    requestBody: { required: false, content: json(resumeSchema) },
    responses: {
      '202': { description: '{"taskId": ...}' },
      ...errors,
      '400': {
        description:
          'A bad body or task id (the field is named); `repository_invalid` on a pure node of a fleet (no repository: it resumes no task, whatever the id)',
        content: errorBody,
      },
    },
  },
  'POST /api/tasks/:id/followup': {
    summary:
      "Continue an ended task (COMPLETE, NEEDS_REVIEW or FAILED) on its branch with a person's instruction, as `agent-runner followup`; every criterion is checked again; `pr`: the same pull/merge request updated once it ends",
    parameters: [taskId],
    requestBody: { required: true, content: json(followupSchema) },
    responses: {
      '202': {
        description:
          '{"taskId": ..., "followup": true}; on a node of a fleet, for a task of the fleet: also "queued": true',
      },
      ...errors,
      '400': {
        description:
          'A bad body or task id (the field is named); a task that runs, or one that cannot be followed up (`usage`, with why); on a fleet, a task the fleet has not ended',
        content: errorBody,
      },
    },
  },
  'GET /api/whoami': {
    summary: "The caller: its token's name and role",
    responses: { '200': { description: '{"name": ..., "role": ...}' }, ...errors },
  },
  'GET /api/openapi.json': {
    summary: 'This document',
    responses: { '200': { description: 'OpenAPI 3.1' }, ...errors },
  },
  'GET /api/audit': {
    summary:
      'The audit log: every call that changed something (who, role, action, task, from where, status, when), oldest first',
    parameters: [
      {
        name: 'since',
        in: 'query',
        required: false,
        schema: { type: 'string' },
        description: 'A duration back from now (90m, 12h, 7d) or an ISO time',
      },
    ],
    responses: { '200': { description: '{"entries": [...]}' }, ...errors },
  },
  'GET /api/tokens': {
    summary: 'The named tokens: name, role, created, last used, revoked (never the token)',
    responses: { '200': { description: '{"tokens": [...]}' }, ...errors },
  },
  'POST /api/tokens': {
    summary: 'Create a named token; the answer holds the token, the only time it is shown',
    requestBody: { required: true, content: json(createTokenSchema) },
    responses: { '201': { description: '{"token": ..., "name", "role", ...}' }, ...errors },
  },
  'POST /api/tokens/:name/revoke': {
    summary:
      'Revoke the named token: every server that reads the same store refuses it from the next request',
    parameters: [tokenName],
    responses: { '200': { description: 'The revoked token (no secret)' }, ...errors },
  },
};

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of API_ROUTES) {
    const operation = OPERATIONS[`${route.method} ${route.path}` as ApiRouteKey];
    const entry = (paths[openApiPath(route.path)] ??= {});
    entry[route.method.toLowerCase()] = {
      ...operation,
      description: `Needs a token whose role is ${route.role} or above (roles, lowest first: ${ROLES.join(', ')}).${
        'action' in route ? ` Each call is written to the audit log as \`${route.action}\`.` : ''
      }`,
      'x-required-role': route.role,
      ...('action' in route ? { 'x-audit-action': route.action } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'agent-runner', version: VERSION },
    components: { securitySchemes: { token: { type: 'http', scheme: 'bearer' } } },
    security: [{ token: [] }],
    paths,
  };
}
