/**
 * Parsing the JSONL stream of `gemini -p --output-format stream-json` into the summary every worker run
 * gives. Events: `init` (the session id), `message` (the prompt, and the answer's chunks with `delta`),
 * `tool_use` (`run_shell_command` is a command; `write_file` and `replace` name a file), `tool_result`
 * (`status` is the tool's, not the command's: a command that exited non-zero is still "success"), `result`
 * (status and token stats), `error`. Gemini CLI reports no exit code in its stream: a command's exit code is
 * "Exit Code: N" when its output says so, and otherwise unknown (null, status `unknown`): the checks
 * agent-runner runs itself decide. Nothing in the stream is fatal.
 */
import type { WorkerEvent } from '../core/ports.js';
import {
  count,
  isObject,
  JsonlStreamParser,
  text,
  type JsonObject,
  type WorkerStreamSummary,
} from './stream-parser.js';

const FILE_TOOLS: Record<string, string> = { write_file: 'write', replace: 'edit' };

export class GeminiEventParser extends JsonlStreamParser {
  /** The assistant's answer being streamed (chunks since the last tool call). */
  private answer = '';

  override summary(): WorkerStreamSummary {
    this.flushAnswer();
    return super.summary();
  }

  protected handle(event: JsonObject): boolean {
    switch (event.type) {
      case 'init': {
        const threadId = text(event.session_id);
        if (threadId === undefined) return false;
        this.startThread(threadId);
        return true;
      }
      case 'message':
        if (event.role === 'assistant') this.answer += text(event.content) ?? '';
        return true;
      case 'tool_use':
        this.flushAnswer();
        this.handleToolUse(event);
        return true;
      case 'tool_result':
        this.handleToolResult(event);
        return true;
      case 'error': {
        const message = `gemini: ${text(event.message) ?? JSON.stringify(event).slice(0, 300)}`;
        this.keep(this.state.notices, message);
        this.emit({ kind: 'error', message, fatal: false });
        return true;
      }
      case 'result':
        this.flushAnswer();
        this.handleResult(event);
        return true;
      default:
        return false;
    }
  }

  private handleToolUse(event: JsonObject): void {
    const name = text(event.tool_name) ?? '';
    const parameters = isObject(event.parameters) ? event.parameters : {};
    if (name === 'run_shell_command') {
      this.commandStarted(text(parameters.command) ?? '', text(event.tool_id));
      return;
    }
    const change = FILE_TOOLS[name];
    const filePath = text(parameters.file_path);
    if (change !== undefined && filePath !== undefined) this.fileChanged(filePath, change);
  }

  private handleToolResult(event: JsonObject): void {
    const command = this.commandOf(text(event.tool_id), true);
    if (command === undefined) return;
    const output = text(event.output) ?? (isObject(event.error) ? (text(event.error.message) ?? '') : '');
    const stated = /Exit Code: (\d{1,3})\b/.exec(output);
    command.exitCode = stated ? Number(stated[1]) : null;
    command.status =
      event.status === 'error'
        ? 'failed'
        : command.exitCode === null
          ? 'unknown'
          : command.exitCode === 0
            ? 'completed'
            : 'failed';
    this.commandFinished(command, output);
  }

  private handleResult(event: JsonObject): void {
    this.state.turnsCompleted += 1;
    const stats = isObject(event.stats) ? event.stats : {};
    this.state.usage.inputTokens += count(stats.input_tokens);
    this.state.usage.cachedInputTokens += count(stats.cached);
    this.state.usage.outputTokens += count(stats.output_tokens);
    if (event.status !== 'success') {
      const error = isObject(event.error) ? event.error : {};
      const message = `gemini ended with an error: ${text(error.message) ?? text(event.status) ?? 'no detail'}`;
      this.keep(this.state.turnFailures, message);
      this.emit({ kind: 'error', message, fatal: true });
    }
  }

  private flushAnswer(): void {
    const answer = this.answer.trim();
    this.answer = '';
    if (answer === '') return;
    this.keep(this.state.agentMessages, answer);
    this.emit({ kind: 'message', text: answer });
  }
}

/** Parses a whole saved stream (a run's gemini.jsonl, a test fixture). */
export function parseGeminiJsonl(jsonl: string, onEvent?: (event: WorkerEvent) => void): WorkerStreamSummary {
  const parser = new GeminiEventParser(onEvent);
  for (const line of jsonl.split('\n')) parser.push(line);
  return parser.summary();
}
