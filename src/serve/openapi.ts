/**
 * The OpenAPI 3.1 document of the server's API, made from the zod schemas that check its requests (zod's own
 * JSON Schema output), so what is documented is what is accepted.
 */
import * as z from 'zod';
import { VERSION } from '../version.js';
import { answerSchema, resumeSchema, startTaskSchema } from './api-schemas.js';

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
const errors = {
  '400': { description: 'A bad body or task id (the field is named)', content: errorBody },
  '401': { description: 'The token is missing or wrong', content: errorBody },
  '404': { description: 'No such task', content: errorBody },
};

/** The routes of one task. */
function taskPaths(): Record<string, unknown> {
  return {
    '/api/tasks/{id}': {
      get: {
        summary: 'One task: its board line, plan, run records and summary',
        parameters: [taskId],
        responses: { '200': { description: 'The task' }, ...errors },
      },
    },
    '/api/tasks/{id}/events': {
      get: {
        summary:
          "The task's journal as Server-Sent Events (`journal` events, id = line), then live; resumes after Last-Event-ID; ends with an `end` event",
        parameters: [taskId],
        responses: { '200': { description: 'text/event-stream' }, ...errors },
      },
    },
    '/api/tasks/{id}/diff': {
      get: {
        summary: "The task branch's diff since its base (text)",
        parameters: [taskId],
        responses: { '200': { description: 'text/plain' }, ...errors },
      },
    },
    '/api/tasks/{id}/note': {
      get: {
        summary: "The task's note (Markdown)",
        parameters: [taskId],
        responses: { '200': { description: 'text/markdown' }, ...errors },
      },
    },
    '/api/tasks/{id}/answer': {
      post: {
        summary: "Answer the task's ask_human question",
        parameters: [taskId],
        requestBody: { required: true, content: json(answerSchema) },
        responses: {
          '202': { description: "Answered (another node's task: sent to its node, `node` names it)" },
          ...errors,
          '409': {
            description: 'Not run by this server, or a fleet task that is queued or ended',
            content: errorBody,
          },
        },
      },
    },
    '/api/tasks/{id}/resume': {
      post: {
        summary:
          'Resume the task from its journal (a stale one, or one that ended NEEDS_REVIEW or FAILED), as `agent-runner resume`',
        parameters: [taskId],
        requestBody: { required: false, content: json(resumeSchema) },
        responses: { '202': { description: '{"taskId": ...}' }, ...errors },
      },
    },
    '/api/tasks/{id}/stop': {
      post: {
        summary: 'Stop the task as Ctrl-C does (its work saved, its note written); again to hurry',
        parameters: [taskId],
        responses: {
          '202': { description: 'Stopping (another node\'s task: `"stop": "requested"`, `node` names it)' },
          ...errors,
          '409': {
            description: 'Not run by this server, or a fleet task that is queued or ended',
            content: errorBody,
          },
        },
      },
    },
  };
}

export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: 'agent-runner', version: VERSION },
    components: { securitySchemes: { token: { type: 'http', scheme: 'bearer' } } },
    security: [{ token: [] }],
    paths: {
      '/api/tasks': {
        get: {
          summary: "The repository's tasks (state, title, branch, times, runs, usage, cost)",
          responses: { '200': { description: 'The tasks' }, ...errors },
        },
        post: {
          summary: 'Start a task; answers its id at once (the task goes on in the server)',
          requestBody: { required: true, content: json(startTaskSchema) },
          responses: { '202': { description: '{"taskId": ...}' }, ...errors },
        },
      },
      ...taskPaths(),
      '/api/openapi.json': {
        get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } },
      },
    },
  };
}
