/** The CLI's output streams, injectable so commands can be tested without touching process.stdout. */
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
