/**
 * The CLI's output streams, injectable so commands can be tested without touching process.stdout. Every line
 * agent-runner prints goes through {@link redactingOutput}: the process's one {@link Redaction} sees stdout
 * (`--json` and human) and stderr (progress, notices, errors) before they leave.
 */
import { Redaction } from '../notes/redact.js';

export interface CliOutput {
  out(text: string): void;
  err(text: string): void;
  isTTY: boolean;
}

export const processOutput: CliOutput = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  isTTY: Boolean(process.stdout.isTTY),
};

/**
 * `inner` behind `redaction`: a JSON text (a `--json` event) keeps being valid JSON with every string inside
 * redacted; anything else is redacted as text.
 */
export function redactingOutput(inner: CliOutput, redaction: Redaction): CliOutput {
  return {
    out: (text) => inner.out(redaction.redactJsonText(text)),
    err: (text) => inner.err(redaction.redactJsonText(text)),
    get isTTY() {
      return inner.isTTY;
    },
  };
}

/** The redaction point of a CLI process before any configuration is read: the default key variable's value. */
export function processRedaction(env: NodeJS.ProcessEnv): Redaction {
  return new Redaction([env.OPENAI_API_KEY]);
}
