import { runCli } from '../../src/cli/main.js';
import type { CliOutput } from '../../src/cli/output.js';

/** Runs the CLI in-process with captured output. */
export async function runCliCaptured(
  argv: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const output: CliOutput = {
    out: (text) => (stdout += text.endsWith('\n') ? text : `${text}\n`),
    err: (text) => (stderr += text.endsWith('\n') ? text : `${text}\n`),
    isTTY: false,
  };
  const exitCode = await runCli(argv, { output, env: options.env ?? {}, cwd: options.cwd });
  return { exitCode, stdout, stderr };
}
