/**
 * Parsing the JSONL stream of `opencode run --format json` into the summary every worker run gives. Events:
 * `step_start`, `tool_use` (a finished tool call: `part.tool`, `part.state.input`, `part.state.status`, and for
 * `bash` a numeric exit code in `part.state.metadata.exit`), `step_finish` (that step's tokens: the run's usage
 * is their sum), `text` (the answer), `error`. Every event carries the session id (`sessionID`). Nothing in
 * the stream is fatal: lines that are not JSON and events it does not know are counted.
 */
import type { WorkerCommand, WorkerEvent } from '../core/ports.js';
import { COMMAND_OUTPUT_TAIL_CHARS, MAX_ITEMS_PER_LIST, type WorkerStreamSummary } from './codex-events.js';

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
const tail = (value: string, chars: number): string =>
  value.length <= chars ? value : value.slice(value.length - chars);

const FILE_TOOLS: Record<string, string> = { write: 'write', edit: 'edit', patch: 'edit' };

export class OpenCodeEventParser {
  private readonly commands: WorkerCommand[] = [];
  private readonly state: Omit<WorkerStreamSummary, 'commands'> = {
    threadId: null,
    fileChanges: [],
    agentMessages: [],
    usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 },
    turnFailures: [],
    notices: [],
    turnsCompleted: 0,
    unparsedLines: 0,
    itemsNotKept: 0,
  };

  constructor(private readonly onEvent: (event: WorkerEvent) => void = () => {}) {}

  push(line: string): void {
    const trimmed = line.trim();
    if (trimmed === '') return;
    let event: unknown;
    try {
      event = JSON.parse(trimmed);
    } catch {
      this.state.unparsedLines += 1;
      return;
    }
    if (!isObject(event) || !this.handle(event)) this.state.unparsedLines += 1;
  }

  /** The last text part: OpenCode's answer. */
  finalText(): string | null {
    return this.state.agentMessages.at(-1) ?? null;
  }

  summary(): WorkerStreamSummary {
    return {
      ...this.state,
      commands: this.commands.map((command) => ({ ...command })),
      fileChanges: [...this.state.fileChanges],
      agentMessages: [...this.state.agentMessages],
      usage: { ...this.state.usage },
      turnFailures: [...this.state.turnFailures],
      notices: [...this.state.notices],
    };
  }

  private handle(event: JsonObject): boolean {
    const session = text(event.sessionID);
    if (session !== undefined && this.state.threadId === null) {
      this.state.threadId = session;
      this.emit({ kind: 'thread_started', threadId: session });
    }
    const part = isObject(event.part) ? event.part : {};
    switch (event.type) {
      case 'step_start':
        return true;
      case 'tool_use':
        this.handleTool(part);
        return true;
      case 'step_finish': {
        this.state.turnsCompleted += 1;
        const tokens = isObject(part.tokens) ? part.tokens : {};
        const cache = isObject(tokens.cache) ? tokens.cache : {};
        const reasoning = count(tokens.reasoning);
        this.state.usage.inputTokens += count(tokens.input) + count(cache.read) + count(cache.write);
        this.state.usage.cachedInputTokens += count(cache.read);
        this.state.usage.outputTokens += count(tokens.output) + reasoning;
        this.state.usage.reasoningTokens += reasoning;
        return true;
      }
      case 'text': {
        const answer = text(part.text)?.trim();
        if (answer) {
          this.keep(this.state.agentMessages, answer);
          this.emit({ kind: 'message', text: answer });
        }
        return true;
      }
      case 'error': {
        const error = isObject(event.error) ? event.error : {};
        const data = isObject(error.data) ? error.data : {};
        const message = `opencode ended with an error: ${text(data.message) ?? text(error.name) ?? 'no detail'}`;
        this.keep(this.state.turnFailures, message);
        this.emit({ kind: 'error', message, fatal: true });
        return true;
      }
      default:
        return false;
    }
  }

  private handleTool(part: JsonObject): void {
    const tool = text(part.tool) ?? '';
    const state = isObject(part.state) ? part.state : {};
    const input = isObject(state.input) ? state.input : {};
    if (tool === 'bash') {
      const metadata = isObject(state.metadata) ? state.metadata : {};
      const commandText = text(input.command) ?? '';
      const exitCode = typeof metadata.exit === 'number' ? metadata.exit : null;
      const status =
        state.status === 'completed' && exitCode === 0
          ? 'completed'
          : state.status === 'completed' && exitCode === null
            ? 'unknown'
            : 'failed';
      const command: WorkerCommand = {
        command: commandText,
        exitCode,
        status,
        outputTail: tail(text(metadata.output) ?? text(state.output) ?? '', COMMAND_OUTPUT_TAIL_CHARS),
      };
      this.keep(this.commands, command);
      this.emit({ kind: 'command_started', command: commandText });
      this.emit({ kind: 'command_finished', command: commandText, exitCode, status });
      return;
    }
    const change = FILE_TOOLS[tool];
    const filePath = text(input.filePath);
    if (change !== undefined && filePath !== undefined) {
      this.keep(this.state.fileChanges, { path: filePath, kind: change });
      this.emit({ kind: 'file_changed', path: filePath, change });
    }
  }

  private keep<T>(list: T[], item: T): boolean {
    if (list.length >= MAX_ITEMS_PER_LIST) {
      this.state.itemsNotKept += 1;
      return false;
    }
    list.push(item);
    return true;
  }

  private emit(event: WorkerEvent): void {
    try {
      this.onEvent(event);
    } catch {
      // A listener that throws must not stop the parsing of the run it listens to.
    }
  }
}
