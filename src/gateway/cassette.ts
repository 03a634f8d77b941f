/**
 * Cassettes: every model exchange of a run (Meta-agent Chat Completions and worker Responses), stored so a
 * run can be replayed with no upstream. Exchanges are matched in order, per kind: the n-th worker request of
 * the replay must equal the n-th worker request of the recording (after redaction and normalisation), and
 * gets its recorded reply. Anything else is a divergence that names the call, its kind and what differed.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { UserError } from '../errors.js';
import type { Redactor } from '../notes/redact.js';

export type ExchangeKind = 'worker' | 'meta';

export interface CassetteExchange {
  kind: ExchangeKind;
  /** 0-based position among the exchanges of its kind. */
  index: number;
  method: string;
  /** Path below the route (`/responses`, `/chat/completions`). */
  path: string;
  /** The request body (JSON when it parsed), redacted. */
  request: unknown;
  response: {
    status: number;
    contentType: string;
    /** The whole reply as sent (an SSE stream stays SSE text), redacted. */
    body: string;
  };
  /** The task attempt that made the exchange (absent: the first); `resume` records and replays its own. */
  attempt?: number;
}

export interface Cassette {
  version: 1;
  exchanges: CassetteExchange[];
}

/** A request that does not match the cassette. */
export class ReplayDivergenceError extends UserError {
  constructor(
    message: string,
    readonly divergence: { kind: ExchangeKind; index: number; difference: string },
  ) {
    super('replay_diverged', message, { details: divergence });
  }
}

/**
 * Fields that change on every run without changing what was asked: codex's cache key (its thread id) and its
 * telemetry (`client_metadata`: installation, session and turn ids, timestamps).
 */
const VOLATILE_FIELDS = new Set(['prompt_cache_key', 'client_metadata']);
/** Volatile text inside the conversation, replaced by placeholders (measured with codex 0.169.0). */
const VOLATILE_TEXT: readonly [RegExp, string][] = [
  [/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>'],
  [/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, '<time>'],
  // codex's environment context and exec_command results.
  [/<current_date>[^<]*<\/current_date>/g, '<current_date>-</current_date>'],
  [/Chunk ID: [0-9a-f]+/g, 'Chunk ID: -'],
  [/Wall time: [0-9.]+ seconds/g, 'Wall time: - seconds'],
];

/**
 * What a request asks, as opposed to what it reports. A run replayed later legitimately observes other
 * commit ids, durations and test timings (they flow into the facts the Meta-agent sees and into the command
 * outputs codex sends back), so replay compares only the asking part:
 *   meta (Chat Completions): the model, the system prompt and the first user message (PRD, criteria), and
 *     how many messages there are;
 *   worker (Responses): the model, the instructions and the user messages (the task prompt), not the
 *     function call outputs; (Anthropic Messages, Chat Completions, Gemini) the text the user side asks with.
 * A changed PRD, prompt template, criterion or worker instruction diverges; a different clock does not.
 */
export function requestSignature(kind: ExchangeKind, body: unknown): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const request = body as Record<string, unknown>;
  if (kind === 'meta' && Array.isArray(request.messages)) {
    const messages = request.messages as { role?: string; content?: unknown }[];
    const firstUser = messages.find((message) => message.role === 'user');
    return {
      model: request.model,
      system: messages.filter((message) => message.role === 'system').map((message) => message.content),
      firstUser: firstUser?.content,
      messageCount: messages.length,
    };
  }
  if (kind === 'worker' && Array.isArray(request.messages)) return anthropicSignature(request);
  if (kind === 'worker' && Array.isArray(request.contents)) return geminiSignature(request);
  if (kind === 'worker' && Array.isArray(request.input)) {
    const items = request.input as { type?: string; role?: string; content?: unknown }[];
    return {
      model: request.model,
      instructions: request.instructions,
      userMessages: items
        .filter((item) => (item.type === undefined || item.type === 'message') && item.role === 'user')
        .map((item) => item.content),
    };
  }
  return body;
}

/**
 * An Anthropic Messages request (claude): the model and the text the user side asks with, not the tool results
 * nor claude's `<system-reminder>` blocks (the environment, the git status, the date: what it reports).
 */
function anthropicSignature(request: Record<string, unknown>): unknown {
  const messages = request.messages as { role?: string; content?: unknown }[];
  const asked = messages
    .filter((message) => message.role === 'user')
    .flatMap((message) =>
      typeof message.content === 'string'
        ? [message.content]
        : Array.isArray(message.content)
          ? (message.content as { type?: string; text?: unknown }[])
              .filter((block) => block.type === 'text' && typeof block.text === 'string')
              .map((block) => block.text as string)
          : [],
    )
    .filter((text) => !text.trimStart().startsWith('<system-reminder>'));
  return { model: request.model, userText: asked };
}

/**
 * A Gemini request (the model is in its path): the text the user side asks with, not the function responses
 * nor the CLI's `<session_context>` (the date, the directory listing).
 */
function geminiSignature(request: Record<string, unknown>): unknown {
  const contents = request.contents as { role?: string; parts?: { text?: unknown }[] }[];
  const asked = contents
    .filter((content) => content.role === 'user' && Array.isArray(content.parts))
    .flatMap((content) => (content.parts ?? []).map((part) => part.text))
    .filter(
      (text): text is string => typeof text === 'string' && !text.trimStart().startsWith('<session_context>'),
    );
  return { userText: asked };
}

/** What is compared under replay: volatile fields dropped, volatile text replaced by placeholders. */
export function normalizeForMatch(value: unknown): unknown {
  if (typeof value === 'string') {
    return VOLATILE_TEXT.reduce((text, [pattern, placeholder]) => text.replace(pattern, placeholder), value);
  }
  if (Array.isArray(value)) return value.map(normalizeForMatch);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(value)) {
      if (!VOLATILE_FIELDS.has(key)) out[key] = normalizeForMatch(entry);
    }
    return out;
  }
  return value;
}

function preview(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
}

/** The first place where `actual` differs from `expected`, as `path: recorded X, now Y`; null when equal. */
export function firstDifference(expected: unknown, actual: unknown, at = ''): string | null {
  const where = at === '' ? '(body)' : at;
  if (Array.isArray(expected) && Array.isArray(actual)) {
    for (let index = 0; index < Math.max(expected.length, actual.length); index += 1) {
      const found = firstDifference(expected[index], actual[index], `${at}[${index}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (
    typeof expected === 'object' &&
    expected !== null &&
    typeof actual === 'object' &&
    actual !== null &&
    !Array.isArray(expected) &&
    !Array.isArray(actual)
  ) {
    const left = expected as Record<string, unknown>;
    const right = actual as Record<string, unknown>;
    for (const key of new Set([...Object.keys(left), ...Object.keys(right)])) {
      const found = firstDifference(left[key], right[key], at === '' ? key : `${at}.${key}`);
      if (found !== null) return found;
    }
    return null;
  }
  if (expected === actual) return null;
  return `${where}: recorded ${preview(expected)}, now ${preview(actual)}`;
}

/** Parses a request body as JSON when it is JSON, else keeps the text. */
export function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Accumulates exchanges and rewrites the cassette file after each one, so a crashed run keeps its calls. */
export class CassetteRecorder {
  private readonly cassette: Cassette = { version: 1, exchanges: [] };
  private writing: Promise<void> = Promise.resolve();
  /** The attempt this recorder's exchanges belong to (1 unless it continues an earlier recording). */
  private attempt = 1;

  /**
   * A recorder that keeps the exchanges already in `file` (a resumed task) and marks its own with the next
   * attempt number, so a replay of the resumed attempt gets exactly them; a missing file starts empty.
   */
  static async continuing(file: string, redact: Redactor): Promise<CassetteRecorder> {
    const recorder = new CassetteRecorder(file, redact);
    const text = await readFile(file, 'utf8').catch(() => null);
    if (text !== null) {
      const earlier = JSON.parse(text) as Cassette;
      if (earlier.version === 1 && Array.isArray(earlier.exchanges)) {
        recorder.cassette.exchanges.push(...earlier.exchanges);
        recorder.attempt = 1 + Math.max(1, ...earlier.exchanges.map((exchange) => exchange.attempt ?? 1));
      }
    }
    return recorder;
  }

  constructor(
    private readonly file: string,
    private readonly redact: Redactor,
  ) {}

  /** Adds an exchange (its texts are redacted here) and schedules the write. */
  add(exchange: Omit<CassetteExchange, 'request'> & { requestText: string }): Promise<void> {
    const { requestText, ...rest } = exchange;
    this.cassette.exchanges.push({
      ...rest,
      path: this.redact(rest.path),
      request: parseBody(this.redact(requestText)),
      response: { ...rest.response, body: this.redact(rest.response.body) },
      ...(this.attempt > 1 ? { attempt: this.attempt } : {}),
    });
    const text = `${JSON.stringify(this.cassette, null, 2)}\n`;
    this.writing = this.writing.then(async () => {
      const temporary = `${this.file}.tmp`;
      await writeFile(temporary, text, { mode: 0o600 });
      await rename(temporary, this.file);
    });
    return this.writing;
  }

  /** Resolves when every write so far is on disk. */
  flush(): Promise<void> {
    return this.writing;
  }
}

/** Serves a cassette's replies in order, per kind. */
export class CassettePlayer {
  private readonly next: Record<ExchangeKind, number> = { worker: 0, meta: 0 };

  private constructor(
    private readonly file: string,
    private readonly byKind: Record<ExchangeKind, CassetteExchange[]>,
  ) {}

  /** `attempt`: replay only the exchanges of that task attempt (a resumed task's own; default the first). */
  static async load(file: string, attempt = 1): Promise<CassettePlayer> {
    let cassette: Cassette;
    try {
      cassette = JSON.parse(await readFile(file, 'utf8')) as Cassette;
    } catch (error) {
      throw new UserError(
        'usage',
        `Cannot read the cassette ${file} for --replay: ${error instanceof Error ? error.message : String(error)}. ` +
          'Give a file written by `--record`.',
        { cause: error },
      );
    }
    if (cassette.version !== 1 || !Array.isArray(cassette.exchanges)) {
      throw new UserError(
        'usage',
        `${file} is not an agent-runner cassette (version 1). Record it with --record.`,
      );
    }
    const ofAttempt = cassette.exchanges.filter((exchange) => (exchange.attempt ?? 1) === attempt);
    return new CassettePlayer(file, {
      worker: ofAttempt.filter((exchange) => exchange.kind === 'worker'),
      meta: ofAttempt.filter((exchange) => exchange.kind === 'meta'),
    });
  }

  /**
   * The recorded reply for this request, or a ReplayDivergenceError naming the call. `requestText` must
   * already be redacted the way the recording was.
   */
  match(kind: ExchangeKind, method: string, path: string, requestText: string): CassetteExchange {
    const index = this.next[kind];
    const recorded = this.byKind[kind][index];
    const call = `${kind} call #${index + 1} (${method} ${path})`;
    const diverge = (difference: string): ReplayDivergenceError =>
      new ReplayDivergenceError(
        `Replay of ${this.file} diverged at ${call}: ${difference}. The run no longer asks what was recorded; ` +
          'record it again with --record.',
        { kind, index, difference },
      );
    if (recorded === undefined) {
      throw diverge(`the recording has only ${this.byKind[kind].length} ${kind} calls`);
    }
    if (recorded.method !== method || recorded.path !== path) {
      throw diverge(`recorded ${recorded.method} ${recorded.path}`);
    }
    const difference = firstDifference(
      normalizeForMatch(requestSignature(kind, recorded.request)),
      normalizeForMatch(requestSignature(kind, parseBody(requestText))),
    );
    if (difference !== null) throw diverge(difference);
    this.next[kind] = index + 1;
    return recorded;
  }

  /** Recorded exchanges never asked for, per kind (a replay that ended early). */
  remaining(): Record<ExchangeKind, number> {
    return {
      worker: this.byKind.worker.length - this.next.worker,
      meta: this.byKind.meta.length - this.next.meta,
    };
  }
}
