/**
 * The Meta-agent: plan (PRD → acceptance criteria), next action, completion assessment. Each call builds a
 * bounded prompt (system prompt, then the stable task part, then the varying part), asks the model, parses
 * the reply in the constrained-YAML protocol, and sends invalid replies back with their exact errors up to
 * `meta.maxRepairs` times before failing with ModelBehaviorError('protocol_invalid').
 */
import type { Config } from '../config/schema.js';
import { ModelBehaviorError } from '../errors.js';
import type {
  CompletionAssessmentMessage,
  MessageOf,
  MessageType,
  NextActionMessage,
  PlanTaskMessage,
} from '../protocol/messages.js';
import {
  parseMessage,
  type MessageCheckContext,
  type ParseMessageResult,
} from '../protocol/parse-message.js';
import { formatProtocolIssue } from '../protocol/protocol-issue.js';
import { MetaCallLog } from './meta-call-log.js';
import type { FactsForAssessment, LoopContext, PlanContext } from './meta-context.js';
import type { Usage } from '../core/types.js';
import { addUsage, ZERO_USAGE } from '../core/usage.js';
import type { MetaMessage, MetaModel } from './meta-model.js';
import { defaultProtocolsDir, defaultTemplatesDir } from './package-paths.js';
import { buildPromptContext, type PromptContextInput } from './prompt-context.js';
import {
  loadSystemPrompts,
  type SystemPromptData,
  type SystemPromptRenderer,
  type WorkerOffer,
} from './system-prompt.js';

export interface CreateMetaAgentOptions {
  model: MetaModel;
  /** meta.maxRepairs and meta.promptBudgetTokens are used. */
  config: Pick<Config, 'meta'>;
  /** Defaults to the package's templates/. */
  templatesDir?: string;
  /** Defaults to the package's protocols/ (examples shown in the prompts). */
  protocolsDir?: string;
  /** When given, every call is written there (e.g. `.agent-runner/runs/<TASK-ID>/meta`). */
  logDir?: string;
  /** Applied to what the call log writes (keys and configured secrets). */
  redact?: (text: string) => string;
  /** Worker types the model may call; default `['codex']`. */
  workerTypes?: string[];
  /** A line on each worker offered (type, model, what it is good at), listed in the prompt when there are several. */
  workers?: WorkerOffer[];
  signal?: AbortSignal;
}

/** A parsed message and what it cost. */
export interface MetaCallResult<T> {
  message: T;
  /** Summed over all attempts of this call (repairs included). */
  usage: Usage;
  /** One entry per model call. */
  calls: Usage[];
  /** 1 + the number of repairs that were needed. */
  attempts: number;
  /** Every raw reply, the accepted one last. */
  rawReplies: string[];
  /** What was reduced to fit the prompt budget (empty when everything fitted). */
  reductions: string[];
}

/** Per call: Ctrl-C and the task's wall clock abort a call in flight. */
export interface MetaCallOptions {
  signal?: AbortSignal;
}

export interface MetaAgent {
  plan(
    prd: string,
    context: PlanContext,
    options?: MetaCallOptions,
  ): Promise<MetaCallResult<PlanTaskMessage>>;
  nextAction(context: LoopContext, options?: MetaCallOptions): Promise<MetaCallResult<NextActionMessage>>;
  assess(
    context: LoopContext,
    facts: FactsForAssessment,
    options?: MetaCallOptions,
  ): Promise<MetaCallResult<CompletionAssessmentMessage>>;
}

interface CallSpec<T extends MessageType> {
  type: T;
  systemData: SystemPromptData;
  context: PromptContextInput;
  checks: MessageCheckContext;
  signal?: AbortSignal;
}

function repairRequest(type: string, issues: string[]): string {
  return [
    `Your reply is not a valid \`${type}\` message. Errors (line numbers refer to your reply):`,
    ...issues.map((issue) => `- ${issue}`),
    '',
    `Reply again with the whole corrected \`${type}\` message: one YAML document, nothing else.`,
  ].join('\n');
}

/** What `callWithRepairs` needs besides the call itself. */
export interface MetaCallDeps {
  model: MetaModel;
  config: Pick<Config, 'meta'>;
  log?: MetaCallLog;
  signal?: AbortSignal;
}

/** One Meta-agent call: its purpose (the message type asked for), system prompt, context and reply parser. */
export interface MetaCallSpec<T> {
  purpose: string;
  system: string;
  context: PromptContextInput;
  parse: (reply: string) => ParseMessageResult<T>;
}

/**
 * Asks the model, parses the reply and sends invalid replies back with their exact errors up to
 * `meta.maxRepairs` times; every attempt is logged. Shared by every message the Meta-agent answers.
 */
export async function callWithRepairs<T>(
  options: MetaCallDeps,
  spec: MetaCallSpec<T>,
): Promise<MetaCallResult<T>> {
  const log = options.log;
  const system = spec.system;
  const prompt = buildPromptContext(spec.context, system, options.config.meta.promptBudgetTokens);
  const messages: MetaMessage[] = [
    { role: 'system', content: system },
    { role: 'user', content: prompt.stable },
    { role: 'user', content: prompt.varying },
  ];
  const maxAttempts = options.config.meta.maxRepairs + 1;
  const rawReplies: string[] = [];
  const calls: Usage[] = [];
  let lastIssues: string[] = [];
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    let completion;
    try {
      completion = await options.model.complete(messages, { purpose: spec.purpose, signal: options.signal });
    } catch (error) {
      await log?.write({
        purpose: spec.purpose,
        attempt,
        maxAttempts,
        model: options.model.model,
        messages,
        error: error instanceof Error ? error.message : String(error),
        reductions: prompt.reductions,
        estimatedTokens: prompt.estimatedTokens,
      });
      throw error;
    }
    rawReplies.push(completion.text);
    calls.push(completion.usage);
    const parsed = spec.parse(completion.text);
    lastIssues = parsed.ok ? [] : parsed.issues.map(formatProtocolIssue);
    await log?.write({
      purpose: spec.purpose,
      attempt,
      maxAttempts,
      model: completion.model,
      messages,
      reply: completion.text,
      usage: completion.usage,
      durationMs: completion.durationMs,
      issues: lastIssues,
      reductions: prompt.reductions,
      estimatedTokens: prompt.estimatedTokens,
    });
    if (parsed.ok) {
      return {
        message: parsed.message,
        usage: calls.reduce(addUsage, ZERO_USAGE),
        calls,
        attempts: attempt,
        rawReplies,
        reductions: prompt.reductions,
      };
    }
    messages.push(
      { role: 'assistant', content: completion.text },
      { role: 'user', content: repairRequest(spec.purpose, lastIssues) },
    );
  }
  throw await stillInvalid(log, spec.purpose, maxAttempts, lastIssues, rawReplies, calls);
}

/** The error of a call whose replies were still invalid after every repair (the raw replies are logged). */
async function stillInvalid(
  log: MetaCallLog | undefined,
  purpose: string,
  maxAttempts: number,
  lastIssues: string[],
  rawReplies: string[],
  calls: Usage[],
): Promise<ModelBehaviorError> {
  const rawFile = await log?.writeRawReplies(purpose, rawReplies);
  const where = rawFile ? ` The raw replies are in ${rawFile}.` : '';
  return new ModelBehaviorError(
    'protocol_invalid',
    `The Meta-agent's \`${purpose}\` reply was still invalid after ${maxAttempts - 1} repair(s): ${lastIssues.slice(0, 3).join('; ')}.${where} ` +
      'Use a stronger model (meta.model) or allow more repairs (meta.maxRepairs).',
    {
      details: {
        messageType: purpose,
        issues: lastIssues,
        rawReplies,
        rawRepliesFile: rawFile,
        usage: calls.reduce(addUsage, ZERO_USAGE),
      },
    },
  );
}

/** Creates the Meta-agent the loop calls. Templates are loaded on first use. */
export function createMetaAgent(options: CreateMetaAgentOptions): MetaAgent {
  const log = options.logDir ? new MetaCallLog(options.logDir, options.redact) : undefined;
  const workerTypes = options.workerTypes ?? ['codex'];
  let renderer: Promise<SystemPromptRenderer> | undefined;
  const systemPrompts = () =>
    (renderer ??= loadSystemPrompts(
      options.templatesDir ?? defaultTemplatesDir(),
      options.protocolsDir ?? defaultProtocolsDir(),
    ));

  async function call<T extends MessageType>(spec: CallSpec<T>): Promise<MetaCallResult<MessageOf<T>>> {
    const signals = [options.signal, spec.signal].filter((item): item is AbortSignal => item !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    return callWithRepairs(
      { model: options.model, config: options.config, log, signal },
      {
        purpose: spec.type,
        system: (await systemPrompts())(spec.type, spec.systemData),
        context: spec.context,
        parse: (reply) => parseMessage(reply, spec.type, spec.checks),
      },
    );
  }

  return {
    plan: (prd, context, callOptions = {}) => call({ signal: callOptions.signal, ...planSpec(prd, context) }),
    nextAction: (context, callOptions = {}) =>
      call({ signal: callOptions.signal, ...nextActionSpec(context, workerTypes, options.workers) }),
    assess: (context, facts, callOptions = {}) =>
      call({ signal: callOptions.signal, ...assessSpec(context, facts) }),
  };
}

/** The `plan_task` call: the PRD and the memory, for the acceptance criteria (a follow-up: their revision). */
function planSpec(prd: string, context: PlanContext): Omit<CallSpec<'plan_task'>, 'signal'> {
  const { followup } = context;
  return {
    type: 'plan_task',
    systemData: {
      taskId: context.taskId,
      memory: (context.memory?.length ?? 0) > 0,
      followup: Boolean(followup),
    },
    context: {
      taskId: context.taskId,
      prd,
      memory: context.memory,
      ...(context.decisions ? { decisions: context.decisions } : {}),
      ...(followup ? { followup } : {}),
      request: followup
        ? `This is follow-up ${followup.number} of task ${context.taskId}. Reply with one \`plan_task\` message ` +
          'holding the whole list of acceptance criteria after this follow-up: every criterion that held, exactly ' +
          'as written; the ones that did not hold, as they are or revised; new criteria for what the instruction ' +
          'asks, with new ids.'
        : `Reply with one \`plan_task\` message for task ${context.taskId}.`,
    },
    checks: { taskId: context.taskId },
  };
}

/** What every call of the loop shows: the task, its PRD and criteria, the memory and the runs so far. */
function loopBasics(context: LoopContext) {
  return {
    taskId: context.taskId,
    prd: context.prd,
    acceptanceCriteria: context.acceptanceCriteria,
    memory: context.memory,
    ...(context.decisions ? { decisions: context.decisions } : {}),
    history: context.history,
    ...(context.followup ? { followup: context.followup } : {}),
  };
}

/** The `next_action` call: the loop so far, for the next step. */
function nextActionSpec(
  context: LoopContext,
  workerTypes: string[],
  workers: WorkerOffer[] | undefined,
): Omit<CallSpec<'next_action'>, 'signal'> {
  const canResume = context.canResume ?? context.history.some((run) => run.action === 'run_worker');
  return {
    type: 'next_action',
    systemData: { taskId: context.taskId, patterns: context.patterns, workerTypes, workers, canResume },
    context: {
      ...loopBasics(context),
      facts: context.lastFacts,
      request: 'Decide the next step. Reply with one `next_action` message.',
    },
    checks: {
      knownPatterns: context.patterns.map((pattern) => pattern.name),
      workerTypes,
      canResume,
    },
  };
}

/** The `completion_assessment` call: every acceptance criterion judged against the facts. */
function assessSpec(
  context: LoopContext,
  facts: FactsForAssessment,
): Omit<CallSpec<'completion_assessment'>, 'signal'> {
  return {
    type: 'completion_assessment',
    systemData: { taskId: context.taskId },
    context: {
      ...loopBasics(context),
      facts,
      request: `Judge every acceptance criterion (${context.acceptanceCriteria.map((criterion) => criterion.id).join(', ')}) against the facts. Reply with one \`completion_assessment\` message.`,
    },
    checks: { acceptanceCriterionIds: context.acceptanceCriteria.map((criterion) => criterion.id) },
  };
}
