/**
 * The single error boundary: parse, run, and turn any error into one clear message and an exit code.
 */
import { CommanderError } from 'commander';
import { AgentRunnerError, EXIT_CODES, isAgentRunnerError } from '../errors.js';
import { processOutput, processRedaction, safeOutput, type CliOutput } from './output.js';
import { createProgram, translateCommanderError } from './program.js';

/** Runs the CLI with `argv` (without node and script) and returns the exit code. Never throws. */
export async function runCli(
  argv: readonly string[],
  options: { output?: CliOutput; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<number> {
  const env = options.env ?? process.env;
  // Everything printed, errors included, passes the process's one redaction point and the terminal rule.
  const redaction = processRedaction(env);
  const output = safeOutput(options.output ?? processOutput, redaction);
  let exitCode: number = EXIT_CODES.complete;
  const program = createProgram({
    output,
    redaction,
    env,
    cwd: options.cwd ?? process.cwd(),
    setExitCode: (code) => {
      exitCode = code;
    },
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    return report(error, output);
  }
}

function report(error: unknown, output: CliOutput): number {
  if (error instanceof CommanderError) {
    const translated = translateCommanderError(error);
    if (!translated) return EXIT_CODES.complete;
    // commander already printed its own message.
    return translated.exitCode;
  }
  if (isAgentRunnerError(error)) {
    output.err(`agent-runner: ${error.message}`);
    if (process.env.AGENT_RUNNER_DEBUG && error.cause)
      output.err(String((error.cause as Error).stack ?? error.cause));
    return error.exitCode;
  }
  const internal = error as Error;
  output.err(`agent-runner: internal error: ${internal?.message ?? String(error)}`);
  output.err('This is a bug in agent-runner. Set AGENT_RUNNER_DEBUG=1 for the stack trace and report it.');
  if (process.env.AGENT_RUNNER_DEBUG) output.err(String(internal?.stack));
  return EXIT_CODES.failed;
}

export { AgentRunnerError };

/**
 * A reader that goes away (`agent-runner run ... | head -1`, a closed terminal) must not kill the task: with
 * no listener an EPIPE on stdout/stderr is an uncaught exception, which left the task stale and its container
 * running. Output just stops; the task goes on, writes its note and exits with its own code.
 */
export function ignoreClosedOutput(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
    throw error;
  });
}

const invokedDirectly = process.argv[1] && /(?:main\.(?:js|ts)|agent-runner(?:\.js)?)$/.test(process.argv[1]);
if (invokedDirectly) {
  ignoreClosedOutput(process.stdout);
  ignoreClosedOutput(process.stderr);
  runCli(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
