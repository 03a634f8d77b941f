/**
 * Parsing the JSONL stream of `claude -p --output-format stream-json --verbose` (and of Qwen Code's
 * `--output-format stream-json`, which has the same shape) into the summary every worker run gives (the same
 * one codex's stream gives). Events: `system`/`init` (the session id), `assistant`
 * (text, and `tool_use` blocks: a `Bash` call is a command), `user` (`tool_result` blocks: a command's
 * outcome), `result` (the run's usage, its final text, and whether it failed). Claude Code gives no numeric exit
 * code for a command that succeeded and only the text "Exit code N" for one that failed: a result that is no
 * error counts as exit 0, an error with that text as N, any other error as unknown (null). Like codex's
 * parser, nothing in the stream is fatal: lines that are not JSON and events it does not know are counted.
 */
import type { WorkerEvent } from '../core/ports.js';
import { count, isObject, JsonlStreamParser, text, type JsonObject } from './stream-parser.js';

/** The text of a tool result's `content`: a string, or text blocks. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => (isObject(block) ? (text(block.text) ?? '') : ''))
    .filter((part) => part !== '')
    .join('\n');
}

/**
 * A command's exit code as its result states it: claude's "Exit code 2" (or "Error: Exit code 2") at the
 * start, or qwen's "Exit Code: 2" line; null when absent.
 */
export function exitCodeFromText(value: string): number | null {
  const match =
    /^(?:Error: )?Exit code (\d{1,3})\b/.exec(value.trimStart()) ?? /^Exit Code: (\d{1,3})$/m.exec(value);
  return match ? Number(match[1]) : null;
}

/** Which CLI the stream comes from: its name in messages and its shell tool. */
export interface ClaudeShapedStream {
  worker: string;
  shellTools: readonly string[];
}

const CLAUDE_STREAM: ClaudeShapedStream = { worker: 'claude', shellTools: ['Bash'] };
export const QWEN_STREAM: ClaudeShapedStream = { worker: 'qwen', shellTools: ['run_shell_command'] };

export class ClaudeEventParser extends JsonlStreamParser {
  private resultText: string | null = null;

  constructor(
    onEvent: (event: WorkerEvent) => void = () => {},
    private readonly stream: ClaudeShapedStream = CLAUDE_STREAM,
  ) {
    super(onEvent);
  }

  /** The text of the `result` event (Claude Code's final answer), or null. */
  finalText(): string | null {
    return this.resultText;
  }

  protected handle(event: JsonObject): boolean {
    switch (event.type) {
      case 'system':
        return this.handleSystem(event);
      case 'assistant':
        return isObject(event.message) ? this.handleAssistant(event.message) : false;
      case 'user':
        return isObject(event.message) ? this.handleUser(event.message, event.tool_use_result) : false;
      case 'result':
        this.handleResult(event);
        return true;
      default:
        return false;
    }
  }

  private handleSystem(event: JsonObject): boolean {
    if (event.subtype === 'init') {
      const threadId = text(event.session_id);
      if (threadId === undefined) return false;
      this.startThread(threadId);
      return true;
    }
    if (event.subtype === 'api_retry') {
      const status = typeof event.error_status === 'number' ? ` (HTTP ${event.error_status})` : '';
      const message = `${this.stream.worker} retries a model request${status}: ${text(event.error) ?? 'no detail'}`;
      this.keep(this.state.notices, message);
      this.emit({ kind: 'error', message, fatal: false });
      return true;
    }
    return false;
  }

  private handleAssistant(message: JsonObject): boolean {
    const blocks = Array.isArray(message.content) ? message.content : [];
    for (const block of blocks) {
      if (!isObject(block)) continue;
      if (block.type === 'text') {
        const value = text(block.text);
        if (value === undefined || value.trim() === '') continue;
        this.keep(this.state.agentMessages, value);
        this.emit({ kind: 'message', text: value });
      } else if (block.type === 'tool_use') {
        this.handleToolUse(block);
      }
    }
    return true;
  }

  private handleToolUse(block: JsonObject): void {
    const input = isObject(block.input) ? block.input : {};
    const name = text(block.name);
    if (name !== undefined && this.stream.shellTools.includes(name)) {
      this.commandStarted(text(input.command) ?? '', text(block.id));
      return;
    }
    // What the agent says it wrote: shown live; the files changed are read from git after the run.
    const filePath = text(input.file_path) ?? text(input.notebook_path);
    const tool = name ?? '';
    if (
      filePath !== undefined &&
      ['Write', 'Edit', 'MultiEdit', 'NotebookEdit', 'write_file', 'edit'].includes(tool)
    ) {
      this.fileChanged(filePath, tool === 'Write' || tool === 'write_file' ? 'write' : 'edit');
    }
  }

  private handleUser(message: JsonObject, toolUseResult: unknown): boolean {
    const blocks = Array.isArray(message.content) ? message.content : [];
    for (const block of blocks) {
      if (!isObject(block) || block.type !== 'tool_result') continue;
      const command = this.commandOf(text(block.tool_use_id), true);
      if (command === undefined) continue;
      const resultText = contentText(block.content);
      const failed = block.is_error === true;
      // A stated code wins; otherwise claude reports every non-zero exit as an error, so no error is exit 0.
      command.exitCode = exitCodeFromText(resultText) ?? (failed ? null : 0);
      command.status = failed || (command.exitCode ?? 0) !== 0 ? 'failed' : 'completed';
      const output = isObject(toolUseResult)
        ? `${text(toolUseResult.stdout) ?? ''}${text(toolUseResult.stderr) ? `\n${text(toolUseResult.stderr)}` : ''}`
        : resultText;
      this.commandFinished(command, output);
    }
    return true;
  }

  private handleResult(event: JsonObject): void {
    this.state.turnsCompleted += 1;
    const usage = isObject(event.usage) ? event.usage : {};
    const cached = count(usage.cache_read_input_tokens);
    this.state.usage.inputTokens +=
      count(usage.input_tokens) + count(usage.cache_creation_input_tokens) + cached;
    this.state.usage.cachedInputTokens += cached;
    this.state.usage.outputTokens += count(usage.output_tokens);
    const resultText = text(event.result);
    if (resultText !== undefined && resultText.trim() !== '') this.resultText = resultText;
    const threadId = text(event.session_id);
    if (threadId !== undefined) this.state.threadId ??= threadId;
    if (event.is_error === true || (event.subtype !== undefined && event.subtype !== 'success')) {
      const status = typeof event.api_error_status === 'number' ? ` (HTTP ${event.api_error_status})` : '';
      const message = `${this.stream.worker} ended with an error${status}: ${resultText ?? text(event.subtype) ?? 'no detail'}`;
      this.keep(this.state.turnFailures, message);
      this.emit({ kind: 'error', message, fatal: true });
    }
  }
}

/** Parses a whole saved stream (a run's claude.jsonl, a test fixture). */
export function parseClaudeJsonl(jsonl: string, onEvent?: (event: WorkerEvent) => void): ClaudeEventParser {
  const parser = new ClaudeEventParser(onEvent);
  for (const line of jsonl.split('\n')) parser.push(line);
  return parser;
}
