/**
 * The CLI's output streams, injectable so commands can be tested without touching process.stdout. Every line
 * agent-runner prints goes through {@link safeOutput}, the one point where stdout (`--json` and human) and
 * stderr (progress, notices, errors, prompts) are redacted by the process's {@link Redaction} and have every
 * terminal control from data shown as a visible escape (`\x1b`, src/notes/terminal-text.ts). The runner's own
 * cursor moves (the project progress redrawing its lines) take a separate, explicit path: {@link
 * SafeOutput.redraw} takes coded moves, so no text can ever become one.
 */
import { Redaction } from '../notes/redact.js';
import { cursorSequence, printableText, showControls, type RedrawPiece } from '../notes/terminal-text.js';

export type { RedrawPiece } from '../notes/terminal-text.js';

/** Where printed text ends up: the process's streams, or a test's capture. Written as it is given. */
export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
  isTTY: boolean;
}

/** What commands print through: redacted, terminal controls of data shown as escapes. */
export interface SafeOutput extends CliOutput {
  /** Writes to stderr the runner's redraw: its cursor moves as escape sequences, its text made safe. */
  redraw(pieces: readonly RedrawPiece[]): void;
  /** `text` as it would be printed (redacted, controls shown), for a prompt written by another writer. */
  printable(text: string): string;
}

export const processOutput: CliOutput = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  isTTY: Boolean(process.stdout.isTTY),
};

/**
 * `inner` behind `redaction` and the terminal rule: a JSON text (a `--json` event, `status --json`) stays
 * valid JSON with every string inside redacted and the controls JSON leaves raw written as JSON escapes;
 * any other text is redacted and has its controls shown as `\x1b`-style escapes (`\n` and `\t` kept).
 */
export function safeOutput(inner: CliOutput, redaction: Redaction): SafeOutput {
  const printable = (text: string) => printableText(redaction.redactJsonText(text));
  return {
    out: (text) => inner.out(printable(text)),
    err: (text) => inner.err(printable(text)),
    redraw: (pieces) =>
      inner.err(
        pieces
          .map((piece) =>
            typeof piece === 'string' ? showControls(redaction.redact(piece)) : cursorSequence(piece),
          )
          .join(''),
      ),
    printable: (text) => showControls(redaction.redact(text)),
    get isTTY() {
      return inner.isTTY;
    },
  };
}

/** The redaction point of a CLI process before any configuration is read: the default key variable's value. */
export function processRedaction(env: NodeJS.ProcessEnv): Redaction {
  return new Redaction([env.OPENAI_API_KEY]);
}
