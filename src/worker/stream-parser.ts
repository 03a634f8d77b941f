/**
 * What every worker CLI's JSONL stream parser shares: one line at a time (live WorkerEvents go out while the
 * run goes on), lines that are not JSON or events it does not know counted and skipped, never fatal (a newer CLI
 * adds event kinds; a crash would lose the whole run), every list bounded, and a listener that throws never
 * stopping the parsing. A CLI's parser only says what each of its events means (`handle`).
 */
import type { TokenUsage, WorkerCommand, WorkerEvent } from '../core/ports.js';

/** Characters of a command's output kept per command (the full stream is in the run's JSONL file). */
export const COMMAND_OUTPUT_TAIL_CHARS = 2_000;
/**
 * Items the summary keeps per list (commands, file changes, messages, notices): the stream is the worker's own
 * output and may hold millions of them; the rest are counted (the full stream is in the run's JSONL file).
 */
export const MAX_ITEMS_PER_LIST = 1_000;

/** What a worker's stream said, before the process's exit is known (every worker's parser gives one). */
export interface WorkerStreamSummary {
  threadId: string | null;
  commands: WorkerCommand[];
  fileChanges: { path: string; kind: string }[];
  agentMessages: string[];
  usage: TokenUsage;
  /** Messages of `turn.failed`: the turn failed. */
  turnFailures: string[];
  /** Bare `error` events and `error` items: retry notices and warnings, not failures by themselves. */
  notices: string[];
  turnsCompleted: number;
  unparsedLines: number;
  /** Items past {@link MAX_ITEMS_PER_LIST} in a list, not kept. */
  itemsNotKept: number;
}

export type JsonObject = Record<string, unknown>;

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
/** A token count: a finite non-negative number, else 0. */
export const count = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
export const tail = (value: string, chars: number): string =>
  value.length <= chars ? value : value.slice(value.length - chars);

export abstract class JsonlStreamParser {
  /** The commands, in the order they started (bounded). */
  protected readonly commands: WorkerCommand[] = [];
  /** The kept commands still waiting for their result, by the stream's id. */
  private readonly commandsById = new Map<string, WorkerCommand>();
  protected readonly state: Omit<WorkerStreamSummary, 'commands'> = {
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

  /** One line of stdout (with or without its newline). Blank lines are ignored. */
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

  /** Reads one event; false for one it does not know (counted as unparsed). */
  protected abstract handle(event: JsonObject): boolean;

  /** Pushes `item` unless `list` is full (then counts it); returns whether it was kept. */
  protected keep<T>(list: T[], item: T): boolean {
    if (list.length >= MAX_ITEMS_PER_LIST) {
      this.state.itemsNotKept += 1;
      return false;
    }
    list.push(item);
    return true;
  }

  protected emit(event: WorkerEvent): void {
    // A listener that throws must not stop the parsing of the run it listens to.
    try {
      this.onEvent(event);
    } catch {
      // ignored on purpose
    }
  }

  /** A shell command the stream says started: kept (with its id, when given) and reported live. */
  protected commandStarted(commandText: string, id: string | undefined): WorkerCommand {
    const command: WorkerCommand = {
      command: commandText,
      exitCode: null,
      status: 'in_progress',
      outputTail: '',
    };
    // A command past the bound is reported live, not kept (nor its id: the map stays bounded too).
    if (this.keep(this.commands, command) && id !== undefined) this.commandsById.set(id, command);
    this.emit({ kind: 'command_started', command: commandText });
    return command;
  }

  /** The kept command the stream started under `id`; `take` forgets the id (its result has come). */
  protected commandOf(id: string | undefined, take = false): WorkerCommand | undefined {
    const command = id === undefined ? undefined : this.commandsById.get(id);
    if (take && id !== undefined) this.commandsById.delete(id);
    return command;
  }

  /** A command that ended (its exit code and status set): the tail of `output` kept, the end reported live. */
  protected commandFinished(command: WorkerCommand, output?: string): void {
    if (output !== undefined) command.outputTail = tail(output, COMMAND_OUTPUT_TAIL_CHARS);
    this.emit({
      kind: 'command_finished',
      command: command.command,
      exitCode: command.exitCode,
      status: command.status,
    });
  }

  /** A file the agent says it wrote or edited: shown live; the files changed are read from git after the run. */
  protected fileChanged(path: string, change: string): void {
    this.keep(this.state.fileChanges, { path, kind: change });
    this.emit({ kind: 'file_changed', path, change });
  }

  /** The session id, once: the first one the stream names. */
  protected startThread(threadId: string): void {
    if (this.state.threadId !== null) return;
    this.state.threadId = threadId;
    this.emit({ kind: 'thread_started', threadId });
  }
}
