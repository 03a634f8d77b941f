/**
 * Parsing the JSONL stream of `opencode run --format json` into the summary every worker run gives. Events:
 * `step_start`, `tool_use` (a finished tool call: `part.tool`, `part.state.input`, `part.state.status`, and for
 * `bash` a numeric exit code in `part.state.metadata.exit`), `step_finish` (that step's tokens: the run's usage
 * is their sum), `text` (the answer), `error`. Every event carries the session id (`sessionID`). Nothing in
 * the stream is fatal: lines that are not JSON and events it does not know are counted.
 */
import { count, isObject, JsonlStreamParser, text, type JsonObject } from './stream-parser.js';

const FILE_TOOLS: Record<string, string> = { write: 'write', edit: 'edit', patch: 'edit' };

export class OpenCodeEventParser extends JsonlStreamParser {
  /** The last text part: OpenCode's answer. */
  finalText(): string | null {
    return this.state.agentMessages.at(-1) ?? null;
  }

  protected handle(event: JsonObject): boolean {
    const session = text(event.sessionID);
    if (session !== undefined) this.startThread(session);
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
      // opencode reports a command once, when it has ended: started and finished at once.
      const command = this.commandStarted(commandText, undefined);
      command.exitCode = exitCode;
      command.status = status;
      this.commandFinished(command, text(metadata.output) ?? text(state.output) ?? '');
      return;
    }
    const change = FILE_TOOLS[tool];
    const filePath = text(input.filePath);
    if (change !== undefined && filePath !== undefined) this.fileChanged(filePath, change);
  }
}
