/**
 * Parsing the JSONL stream of `codex exec --json` into a WorkerRunResult. The stream is read one line at a
 * time as codex writes it, so live WorkerEvents go out while the run is still going. Nothing in the stream is
 * fatal to the parser: lines that are not JSON, events of a type we do not know and items we do not read are
 * counted and skipped, because a newer codex adds event kinds and a crash would lose the whole run.
 */
import type { ExecResult, WorkerEvent, WorkerRunResult } from '../core/ports.js';
import {
  COMMAND_OUTPUT_TAIL_CHARS,
  count,
  isObject,
  JsonlStreamParser,
  tail,
  text,
  type JsonObject,
  type WorkerStreamSummary,
} from './stream-parser.js';

export { COMMAND_OUTPUT_TAIL_CHARS, MAX_ITEMS_PER_LIST, type WorkerStreamSummary } from './stream-parser.js';

/**
 * Incremental parser of codex's JSONL events. Feed it every stdout line with `push`; read the summary at
 * any time. `onEvent` receives the live WorkerEvents.
 */
export class CodexEventParser extends JsonlStreamParser {
  /** Returns false for an event it does not know (counted as unparsed). */
  protected handle(event: JsonObject): boolean {
    switch (event.type) {
      case 'thread.started': {
        const threadId = text(event.thread_id);
        if (threadId === undefined) return false;
        this.state.threadId = threadId;
        this.emit({ kind: 'thread_started', threadId });
        return true;
      }
      case 'turn.started':
        return true;
      case 'turn.completed': {
        this.state.turnsCompleted += 1;
        const usage = isObject(event.usage) ? event.usage : {};
        this.state.usage.inputTokens += count(usage.input_tokens);
        this.state.usage.cachedInputTokens += count(usage.cached_input_tokens);
        this.state.usage.outputTokens += count(usage.output_tokens);
        this.state.usage.reasoningTokens += count(usage.reasoning_output_tokens);
        return true;
      }
      case 'turn.failed': {
        const error = isObject(event.error) ? event.error : {};
        const message = text(error.message) ?? 'codex reported turn.failed without a message';
        this.keep(this.state.turnFailures, message);
        this.emit({ kind: 'error', message, fatal: true });
        return true;
      }
      case 'error': {
        // Retry notices ("Reconnecting... 2/5") arrive as bare `error` events: only turn.failed is fatal.
        const message = text(event.message) ?? JSON.stringify(event);
        this.keep(this.state.notices, message);
        this.emit({ kind: 'error', message, fatal: false });
        return true;
      }
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        return isObject(event.item) ? this.handleItem(event.type, event.item) : false;
      default:
        return false;
    }
  }

  private handleItem(phase: 'item.started' | 'item.updated' | 'item.completed', item: JsonObject): boolean {
    const completed = phase === 'item.completed';
    switch (item.type) {
      case 'command_execution':
        this.handleCommand(phase, item);
        return true;
      case 'file_change': {
        if (!completed) return true;
        const changes = Array.isArray(item.changes) ? item.changes : [];
        for (const change of changes) {
          if (!isObject(change)) continue;
          const path = text(change.path);
          if (path === undefined) continue;
          this.fileChanged(path, text(change.kind) ?? 'unknown');
        }
        return true;
      }
      case 'agent_message': {
        const message = text(item.text);
        if (!completed || message === undefined) return true;
        this.keep(this.state.agentMessages, message);
        this.emit({ kind: 'message', text: message });
        return true;
      }
      case 'error': {
        // e.g. "Model metadata for `X` not found": a warning, the turn goes on.
        if (!completed) return true;
        const message = text(item.message) ?? JSON.stringify(item);
        this.keep(this.state.notices, message);
        this.emit({ kind: 'error', message, fatal: false });
        return true;
      }
      case 'reasoning':
      case 'mcp_tool_call':
      case 'web_search':
      case 'todo_list':
        return true;
      default:
        return false;
    }
  }

  private handleCommand(phase: 'item.started' | 'item.updated' | 'item.completed', item: JsonObject): void {
    const id = text(item.id);
    const commandText = text(item.command) ?? '';
    // Item ids restart at item_1 in every process, so they are only unique within one parser.
    const command = this.commandOf(id) ?? this.commandStarted(commandText, id);
    if (commandText !== '') command.command = commandText;
    command.status = text(item.status) ?? command.status;
    command.exitCode = typeof item.exit_code === 'number' ? item.exit_code : command.exitCode;
    const output = text(item.aggregated_output);
    if (output !== undefined) command.outputTail = tail(output, COMMAND_OUTPUT_TAIL_CHARS);
    if (phase === 'item.completed') this.commandFinished(command);
  }
}

/** Parses a whole JSONL text (a saved codex.jsonl, a test fixture). */
export function parseCodexJsonl(jsonl: string, onEvent?: (event: WorkerEvent) => void): WorkerStreamSummary {
  const parser = new CodexEventParser(onEvent);
  for (const line of jsonl.split('\n')) parser.push(line);
  return parser.summary();
}

/** The stream said nothing at all: no session, command, message, notice or finished turn. */
function noEvent(summary: WorkerStreamSummary): boolean {
  return (
    summary.threadId === null &&
    summary.commands.length === 0 &&
    summary.agentMessages.length === 0 &&
    summary.notices.length === 0 &&
    summary.turnsCompleted === 0 &&
    summary.turnFailures.length === 0
  );
}

/**
 * Joins what the stream said with how the process ended. Failure is `turn.failed`, a non-zero exit, a
 * timeout or an interruption; retry notices alone are not.
 */
export function toWorkerRunResult(
  summary: WorkerStreamSummary,
  exec: ExecResult,
  options: {
    timeoutMs: number;
    lastMessage?: string | null;
    /** The worker's name in messages (default codex) and its stream file. */
    worker?: string;
    streamFile?: string;
  },
): WorkerRunResult {
  const worker = options.worker ?? 'codex';
  const errors = [...summary.turnFailures];
  const lastNotice = summary.notices.at(-1);
  const noticeHint = lastNotice === undefined ? '' : ` Last notice from ${worker}: ${lastNotice}`;
  if (exec.timedOut) {
    errors.push(
      `${worker} did not finish within ${formatSeconds(options.timeoutMs)} and was stopped (exit ${exec.exitCode}).` +
        noticeHint,
    );
  } else if (exec.interrupted) {
    errors.push(`${worker} was interrupted (exit ${exec.exitCode}).`);
  } else if (exec.oomKilled) {
    errors.push(`${worker} was killed for lack of memory (exit ${exec.exitCode}); raise sandbox.memory.`);
  } else if ((exec.exitCode === 126 || exec.exitCode === 127) && summary.threadId === null) {
    // 127: not found; 126: found but not executable (the engine reports either for a missing program).
    errors.push(
      `${worker} could not be started in the sandbox (exit ${exec.exitCode}: its binary is missing from the image or cannot run). ` +
        'Run `agent-runner image build`: the worker image holds every configured worker.',
    );
  } else if (exec.exitCode !== 0 && noEvent(summary)) {
    // It stopped before saying anything: a flag it refuses, a version that cannot run here, a broken config.
    const stderr = exec.stderrTail.trim();
    const said = stderr ? `: ${tail(stderr, 1_000)}` : '';
    errors.push(
      `${worker} exited with code ${exec.exitCode} before its first event${said}${said.endsWith('.') ? '' : '.'} ` +
        `Check the flags in workers.${worker}.extraArgs and the CLI's version (workers.${worker}.version); ` +
        '`agent-runner doctor` runs it in the image.',
    );
  } else if (exec.exitCode !== 0 && summary.turnFailures.length === 0) {
    const stderr = exec.stderrTail.trim();
    errors.push(
      `${worker} exited with code ${exec.exitCode}${exec.signal ? ` (signal ${exec.signal})` : ''}` +
        (stderr ? `: ${tail(stderr, 1_000)}` : '.') +
        noticeHint,
    );
  }
  const finalMessage =
    options.lastMessage !== undefined && options.lastMessage !== null && options.lastMessage.trim() !== ''
      ? options.lastMessage
      : (summary.agentMessages.at(-1) ?? null);
  return {
    exitCode: exec.exitCode,
    signal: exec.signal,
    timedOut: exec.timedOut,
    interrupted: exec.interrupted,
    oomKilled: exec.oomKilled,
    durationMs: exec.durationMs,
    threadId: summary.threadId,
    commands: summary.commands,
    fileChanges: summary.fileChanges,
    agentMessages: summary.agentMessages,
    finalMessage,
    usage: summary.usage,
    errors,
    notices:
      summary.itemsNotKept > 0
        ? [
            ...summary.notices,
            `${summary.itemsNotKept} more items of the stream not kept (all are in the run's ${options.streamFile ?? 'codex.jsonl'})`,
          ]
        : summary.notices,
    unparsedLines: summary.unparsedLines,
    failed: errors.length > 0,
  };
}

function formatSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}
