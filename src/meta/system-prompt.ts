/**
 * The Meta-agent's system prompts: Handlebars templates (templates/meta-<message type>.hbs, with the shared
 * partial meta-protocol-rules.hbs), fed with the field list generated from the zod schema and the example
 * message from protocols/ (which a test validates), so neither can drift from what replies are checked against.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import Handlebars from 'handlebars';
import { UserError } from '../errors.js';
import {
  MESSAGE_SCHEMAS,
  NEXT_ACTIONS,
  type MessageType,
  type NextActionKind,
} from '../protocol/messages.js';
import type { PatternInfo } from './meta-context.js';
import { describeSchema } from './schema-summary.js';

/** A worker the Meta-agent may choose, as its prompt lists it. */
export interface WorkerOffer {
  type: string;
  model: string;
  summary: string;
}

/** What the templates may use besides the generated fields and example. */
export interface SystemPromptData {
  taskId?: string;
  patterns?: PatternInfo[];
  workerTypes?: string[];
  /** Listed only when there is more than one. */
  workers?: WorkerOffer[];
  canResume?: boolean;
  memory?: boolean;
  /** A follow-up's plan revision (plan_task with the criteria so far and the instruction). */
  followup?: boolean;
}

const ACTION_DESCRIPTIONS: Record<NextActionKind, string> = {
  run_worker: 'run the worker with `worker_call` (the usual step until the facts show every criterion holds)',
  mark_complete:
    'the facts already show every acceptance criterion holds; the runner then validates for real (brings the commits back, runs the Definition of Done and the criteria checks, asks for an assessment when the evidence changed) and refuses when the facts disagree. Repeating a refused mark_complete on unchanged facts ends the task as stalled',
  ask_human:
    'a decision only a person can take (missing access, contradictory requirements); put it in `question`',
  abort: 'the task cannot be done as specified; say why in `reason`',
};

export type SystemPromptRenderer = (type: MessageType, data: SystemPromptData) => string;

async function readOrExplain(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new UserError(
      'config_invalid',
      `Cannot read ${file}: ${(error as Error).message}. Reinstall agent-runner or fix the templates directory.`,
      {
        cause: error,
      },
    );
  }
}

/** Loads and compiles the templates once; the returned function renders a system prompt. */
export async function loadSystemPrompts(
  templatesDir: string,
  protocolsDir: string,
): Promise<SystemPromptRenderer> {
  const handlebars = Handlebars.create();
  handlebars.registerPartial(
    'meta-protocol-rules',
    await readOrExplain(path.join(templatesDir, 'meta-protocol-rules.hbs')),
  );
  const compiled = new Map<MessageType, HandlebarsTemplateDelegate>();
  const examples = new Map<MessageType, string>();
  const fields = new Map<MessageType, string[]>();
  for (const type of Object.keys(MESSAGE_SCHEMAS) as MessageType[]) {
    const source = await readOrExplain(path.join(templatesDir, `meta-${type.replaceAll('_', '-')}.hbs`));
    // noEscape: these are prompts, not HTML; `"` and `&` must reach the model as written.
    compiled.set(type, handlebars.compile(source, { noEscape: true, strict: false }));
    const example = await readOrExplain(path.join(protocolsDir, `${type}.yaml`));
    examples.set(type, example.replace(/^(#.*\n)+/, '').trimEnd());
    fields.set(type, describeSchema(MESSAGE_SCHEMAS[type]));
  }
  return (type, data) => {
    const template = compiled.get(type);
    if (!template) throw new Error(`no template for ${type}`);
    return template({
      ...data,
      fields: fields.get(type),
      example: examples.get(type),
      actions: NEXT_ACTIONS.map((name) => ({ name, description: ACTION_DESCRIPTIONS[name] })),
      workerTypes: data.workerTypes ?? ['codex'],
      workers: (data.workers?.length ?? 0) > 1 ? data.workers : undefined,
    }).trimEnd();
  };
}
