/**
 * The Meta-agent's two roles in parallel work: the planner (`plan_task` answered with one task's criteria or
 * with subtasks) and the reviewer (`review` of one subtask before it merges). Same call path as every other
 * Meta-agent message: bounded prompt, constrained YAML, repairs with dotted-path errors, call log.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Handlebars from 'handlebars';
import type { Config } from '../config/schema.js';
import { callWithRepairs, type MetaCallResult } from '../meta/meta-agent.js';
import { MetaCallLog } from '../meta/meta-call-log.js';
import type { FactsForAssessment, MemoryEntry } from '../meta/meta-context.js';
import type { MetaModel } from '../meta/meta-model.js';
import { defaultProtocolsDir, defaultTemplatesDir } from '../meta/package-paths.js';
import { describeSchema } from '../meta/schema-summary.js';
import {
  decompositionMessageSchema,
  MAX_SUBTASKS,
  parsePlanAnswer,
  type PlanAnswer,
} from '../protocol/decomposition.js';
import { planTaskMessageSchema, type AcceptanceCriterion } from '../protocol/messages.js';
import { parseReview, reviewMessageSchema, type ReviewMessage } from '../protocol/review.js';

export interface ParallelMetaOptions {
  model: MetaModel;
  config: Pick<Config, 'meta'>;
  logDir?: string;
  redact?: (text: string) => string;
  templatesDir?: string;
  protocolsDir?: string;
}

export interface PlanRequest {
  taskId: string;
  prd: string;
  memory?: MemoryEntry[];
  /** False: only one task's criteria are accepted (`--single`, `parallel.split: never`, a re-plan). */
  allowSubtasks: boolean;
  signal?: AbortSignal;
}

export interface ReviewRequest {
  /** The subtask's task id (`<ID>--<SUB>`). */
  taskId: string;
  prd: string;
  acceptanceCriteria: AcceptanceCriterion[];
  /** The diff, the DoD results and what the gate saw. */
  evidence: FactsForAssessment;
  signal?: AbortSignal;
}

/** The planner and reviewer the orchestrator calls. */
export interface ParallelMeta {
  plan(request: PlanRequest): Promise<MetaCallResult<PlanAnswer>>;
  review(request: ReviewRequest): Promise<MetaCallResult<ReviewMessage>>;
}

async function example(protocolsDir: string, file: string): Promise<string> {
  return (await readFile(path.join(protocolsDir, file), 'utf8')).replace(/^(#.*\n)+/, '').trimEnd();
}

interface Prompts {
  plan(data: { taskId: string; memory: boolean; split: boolean }): string;
  review(data: { taskId: string }): string;
}

async function loadPrompts(templatesDir: string, protocolsDir: string): Promise<Prompts> {
  const handlebars = Handlebars.create();
  const read = (name: string) => readFile(path.join(templatesDir, name), 'utf8');
  handlebars.registerPartial('meta-protocol-rules', await read('meta-protocol-rules.hbs'));
  // noEscape: prompts, not HTML.
  const plan = handlebars.compile(await read('meta-plan-split.hbs'), { noEscape: true });
  const review = handlebars.compile(await read('meta-review.hbs'), { noEscape: true });
  const planData = {
    maxSubtasks: Math.min(4, MAX_SUBTASKS),
    singleFields: describeSchema(planTaskMessageSchema),
    singleExample: await example(protocolsDir, 'plan_task.yaml'),
    splitFields: describeSchema(decompositionMessageSchema),
    splitExample: await example(protocolsDir, 'parallel/plan_task-decomposition.yaml'),
  };
  const reviewData = {
    fields: describeSchema(reviewMessageSchema),
    example: await example(protocolsDir, 'parallel/review.yaml'),
  };
  return {
    plan: (data) => plan({ ...planData, ...data }).trimEnd(),
    review: (data) => review({ ...reviewData, ...data }).trimEnd(),
  };
}

/** Creates the planner/reviewer over a Meta-agent model. Templates are loaded on first use. */
export function createParallelMeta(options: ParallelMetaOptions): ParallelMeta {
  const log = options.logDir ? new MetaCallLog(options.logDir, options.redact) : undefined;
  let prompts: Promise<Prompts> | undefined;
  const load = () =>
    (prompts ??= loadPrompts(
      options.templatesDir ?? defaultTemplatesDir(),
      options.protocolsDir ?? defaultProtocolsDir(),
    ));
  return {
    async plan(request) {
      const system = (await load()).plan({
        taskId: request.taskId,
        memory: (request.memory?.length ?? 0) > 0,
        split: request.allowSubtasks,
      });
      return callWithRepairs(
        { model: options.model, config: options.config, log, signal: request.signal },
        {
          purpose: 'plan_task',
          system,
          context: {
            taskId: request.taskId,
            prd: request.prd,
            memory: request.memory ?? [],
            request: request.allowSubtasks
              ? `Reply with one \`plan_task\` message for task ${request.taskId}: acceptance criteria for one task, or subtasks when the rule for splitting holds.`
              : `Reply with one \`plan_task\` message for task ${request.taskId} with acceptance criteria (no subtasks).`,
          },
          parse: (reply) =>
            parsePlanAnswer(reply, { taskId: request.taskId, allowSubtasks: request.allowSubtasks }),
        },
      );
    },

    async review(request) {
      return callWithRepairs(
        { model: options.model, config: options.config, log, signal: request.signal },
        {
          purpose: 'review',
          system: (await load()).review({ taskId: request.taskId }),
          context: {
            taskId: request.taskId,
            prd: request.prd,
            acceptanceCriteria: request.acceptanceCriteria,
            facts: request.evidence,
            request: `Review subtask ${request.taskId}. Reply with one \`review\` message.`,
          },
          parse: (reply) => parseReview(reply, request.taskId),
        },
      );
    },
  };
}
