/**
 * From a model's raw reply to a typed message: extract the YAML, read it in the constrained subset, check
 * the envelope (`type`, `version`), validate against the zod schema, then run the checks that need the
 * caller's context. Every problem comes back as a `ProtocolIssue` with a dotted path and, when it can be
 * found, the line and column in the reply, ready to be sent back to the model for repair.
 */
import type * as z from 'zod';
import { readConstrainedYaml, type ConstrainedYamlDocument } from './constrained-yaml.js';
import { extractYaml } from './extract-yaml.js';
import {
  MESSAGE_SCHEMAS,
  MESSAGE_TYPES,
  PROTOCOL_VERSION,
  type CompletionAssessmentMessage,
  type MessageOf,
  type MessageType,
  type NextActionMessage,
  type PlanTaskMessage,
} from './messages.js';
import { formatDottedPath, type ProtocolIssue } from './protocol-issue.js';

/** What the caller knows that a reply must agree with. Absent fields skip their check. */
export interface MessageCheckContext {
  /** plan_task: the task id the plan must carry. */
  taskId?: string;
  /** next_action: names of the patterns offered; `used_patterns` may only name these. */
  knownPatterns?: readonly string[];
  /** next_action: worker types offered (e.g. `['codex']`). */
  workerTypes?: readonly string[];
  /** next_action: false when there is no earlier worker thread, so `mode: resume` is refused. */
  canResume?: boolean;
  /** completion_assessment: the plan's acceptance criterion ids; `by_criterion` must cover exactly these. */
  acceptanceCriterionIds?: readonly string[];
}

export type ParseMessageResult<T> =
  { ok: true; message: T; yaml: string } | { ok: false; issues: ProtocolIssue[] };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function zodIssues(issues: readonly z.core.$ZodIssue[], document?: ConstrainedYamlDocument): ProtocolIssue[] {
  const out: ProtocolIssue[] = [];
  const add = (path: readonly PropertyKey[], message: string, key = false) =>
    out.push({ path: formatDottedPath(path), ...document?.locate(path, { key }), message });
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add([...issue.path, key], 'unknown key; remove it', true);
    } else if (issue.code === 'invalid_type' && /received undefined/.test(issue.message)) {
      add(
        issue.path,
        `required (${issue.message.replace(/^Invalid input: /, '').replace(/, received undefined$/, '')})`,
      );
    } else {
      add(issue.path, issue.message);
    }
  }
  return out;
}

function checkEnvelope(
  value: unknown,
  expected: string,
  document?: ConstrainedYamlDocument,
  knownTypes: readonly string[] = MESSAGE_TYPES,
): ProtocolIssue[] {
  const at = (path: PropertyKey[]) => ({ path: formatDottedPath(path), ...document?.locate(path) });
  if (!isPlainObject(value)) {
    return [
      {
        ...document?.locate([]),
        message: 'the message must be a map with the keys type, version and payload',
      },
    ];
  }
  const issues: ProtocolIssue[] = [];
  const type = value.type;
  if (type === undefined) {
    issues.push({ ...at(['type']), message: `required: expected \`type: ${expected}\`` });
  } else if (typeof type !== 'string' || !knownTypes.includes(type)) {
    issues.push({
      ...at(['type']),
      message: `unknown message type \`${String(type)}\`; expected \`${expected}\` (known types: ${knownTypes.join(', ')})`,
    });
  } else if (type !== expected) {
    issues.push({ ...at(['type']), message: `a \`${expected}\` message was asked for, not \`${type}\`` });
  }
  const version = value.version;
  if (version === undefined) {
    issues.push({ ...at(['version']), message: `required: expected \`version: ${PROTOCOL_VERSION}\`` });
  } else if (version !== PROTOCOL_VERSION) {
    issues.push({
      ...at(['version']),
      message: `unsupported version \`${String(version)}\`; this runner speaks version ${PROTOCOL_VERSION}`,
    });
  }
  return issues;
}

function listOf(values: readonly string[]): string {
  return values.length === 0 ? '(none)' : values.join(', ');
}

function crossCheckPlan(message: PlanTaskMessage, context: MessageCheckContext): ProtocolIssue[] {
  if (context.taskId === undefined || message.payload.task_id === context.taskId) return [];
  return [
    {
      path: 'payload.task_id',
      message: `is \`${message.payload.task_id}\` but the task id is \`${context.taskId}\`; use it unchanged`,
    },
  ];
}

function crossCheckNextAction(message: NextActionMessage, context: MessageCheckContext): ProtocolIssue[] {
  const issues: ProtocolIssue[] = [];
  const { payload } = message;
  if (context.knownPatterns !== undefined) {
    const known = new Set(context.knownPatterns);
    payload.used_patterns.forEach((name, index) => {
      if (!known.has(name))
        issues.push({
          path: `payload.used_patterns[${index}]`,
          message: `unknown pattern \`${name}\`; the known patterns are: ${listOf(context.knownPatterns ?? [])}`,
        });
    });
  }
  const call = payload.worker_call;
  if (call && context.workerTypes !== undefined && !context.workerTypes.includes(call.worker_type)) {
    issues.push({
      path: 'payload.worker_call.worker_type',
      message: `unknown worker type \`${call.worker_type}\`; use one of: ${listOf(context.workerTypes)}`,
    });
  }
  if (call?.mode === 'resume' && context.canResume === false) {
    issues.push({
      path: 'payload.worker_call.mode',
      message: 'there is no earlier worker thread to resume; use `mode: exec`',
    });
  }
  return issues;
}

function crossCheckAssessment(
  message: CompletionAssessmentMessage,
  context: MessageCheckContext,
): ProtocolIssue[] {
  const expectedIds = context.acceptanceCriterionIds;
  if (expectedIds === undefined) return [];
  const issues: ProtocolIssue[] = [];
  const expected = new Set(expectedIds);
  const given = new Set<string>();
  message.payload.by_criterion.forEach((entry, index) => {
    given.add(entry.id);
    if (!expected.has(entry.id))
      issues.push({
        path: `payload.by_criterion[${index}].id`,
        message: `unknown acceptance criterion \`${entry.id}\`; the plan's criteria are: ${listOf(expectedIds)}`,
      });
  });
  const missing = expectedIds.filter((id) => !given.has(id));
  if (missing.length > 0)
    issues.push({
      path: 'payload.by_criterion',
      message: `no entry for ${listOf(missing)}; give exactly one entry per acceptance criterion`,
    });
  return issues;
}

function crossCheck(message: MessageOf<MessageType>, context: MessageCheckContext): ProtocolIssue[] {
  switch (message.type) {
    case 'plan_task':
      return crossCheckPlan(message, context);
    case 'next_action':
      return crossCheckNextAction(message, context);
    case 'completion_assessment':
      return crossCheckAssessment(message, context);
  }
}

/**
 * Validates an already-read value as a message of type `expected`. `document` (when the value came from
 * YAML) lets issues carry line numbers.
 */
export function validateMessage<T extends MessageType>(
  value: unknown,
  expected: T,
  context: MessageCheckContext = {},
  document?: ConstrainedYamlDocument,
): ParseMessageResult<MessageOf<T>> {
  const envelopeIssues = checkEnvelope(value, expected, document);
  if (envelopeIssues.length > 0) return { ok: false, issues: envelopeIssues };
  const result = MESSAGE_SCHEMAS[expected].safeParse(value);
  if (!result.success) return { ok: false, issues: zodIssues(result.error.issues, document) };
  const message = result.data as MessageOf<T>;
  const issues = crossCheck(message, context).map((issue) => {
    if (!document || issue.path === undefined) return issue;
    return { ...issue, ...document.locate(parseDottedPath(issue.path)) };
  });
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, message, yaml: '' };
}

/** `payload.by_criterion[1].id` → `['payload', 'by_criterion', 1, 'id']`. */
function parseDottedPath(path: string): PropertyKey[] {
  const segments: PropertyKey[] = [];
  for (const match of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (match[2] !== undefined) segments.push(Number(match[2]));
    else if (match[1] !== undefined) segments.push(match[1]);
  }
  return segments;
}

/** Parses a model's raw reply as a message of type `expected`. Never throws on bad input. */
export function parseMessage<T extends MessageType>(
  reply: string,
  expected: T,
  context: MessageCheckContext = {},
): ParseMessageResult<MessageOf<T>> {
  const extracted = extractYaml(reply);
  if (!extracted.ok) return extracted;
  const read = readConstrainedYaml(extracted.yaml.text, { lineOffset: extracted.yaml.lineOffset });
  if (!read.ok) return read;
  const validated = validateMessage(read.document.value, expected, context, read.document);
  return validated.ok ? { ...validated, yaml: extracted.yaml.text } : validated;
}

/**
 * Parses a reply against a schema that is not one of `MESSAGE_SCHEMAS` (a decomposition, a review): the same
 * extraction, constrained-YAML reading, envelope check and dotted-path issues, then `check` for rules that
 * need the caller's context. Never throws on bad input.
 */
export function parseMessageAs<T>(
  reply: string,
  expected: string,
  schema: z.ZodType<T>,
  check: (message: T, value: unknown) => ProtocolIssue[] = () => [],
  select?: (value: unknown) => { expected: string; schema: z.ZodType<T> } | null,
): ParseMessageResult<T> {
  const extracted = extractYaml(reply);
  if (!extracted.ok) return extracted;
  const read = readConstrainedYaml(extracted.yaml.text, { lineOffset: extracted.yaml.lineOffset });
  if (!read.ok) return read;
  const document = read.document;
  const chosen = select?.(document.value) ?? { expected, schema };
  const envelopeIssues = checkEnvelope(document.value, chosen.expected, document, [
    ...new Set([...MESSAGE_TYPES, chosen.expected]),
  ]);
  if (envelopeIssues.length > 0) return { ok: false, issues: envelopeIssues };
  const result = chosen.schema.safeParse(document.value);
  if (!result.success) return { ok: false, issues: zodIssues(result.error.issues, document) };
  const issues = check(result.data, document.value).map((issue) =>
    issue.path === undefined ? issue : { ...issue, ...document.locate(parseDottedPath(issue.path)) },
  );
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, message: result.data, yaml: extracted.yaml.text };
}
