/**
 * Running host `git`. Every call gets a clean environment (no inherited GIT_DIR, GIT_INDEX_FILE, ...) so
 * a runner started from a git hook or another tool cannot point our commands at the wrong repository.
 */
import { execa } from 'execa';
import { AgentRunnerError } from '../errors.js';

export interface GitCommandOptions {
  cwd: string;
  /** Added to the cleaned environment (GIT_INDEX_FILE for a temporary index, GIT_AUTHOR_* for replay). */
  env?: Record<string, string>;
  input?: string;
  /** Configuration given as `-c key=value` before the subcommand. */
  config?: Record<string, string>;
}

export interface GitCommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** The process environment without any GIT_* variable, plus settings that keep git non-interactive. */
export function cleanGitEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('GIT_')) env[key] = value;
  }
  return { ...env, GIT_TERMINAL_PROMPT: '0', GIT_OPTIONAL_LOCKS: '0', LC_ALL: 'C', ...extra };
}

function configArguments(config: Record<string, string> = {}): string[] {
  return Object.entries(config).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

/** Runs git and returns its result; a non-zero exit is data. */
export async function tryGit(args: readonly string[], options: GitCommandOptions): Promise<GitCommandResult> {
  const result = await execa('git', [...configArguments(options.config), ...args], {
    cwd: options.cwd,
    env: cleanGitEnvironment(options.env),
    extendEnv: false,
    input: options.input,
    reject: false,
    stripFinalNewline: false,
    encoding: 'utf8',
  });
  return { exitCode: result.exitCode ?? 1, stdout: result.stdout, stderr: result.stderr };
}

/** Runs git where the runner expects success; a failure is a `workspace_failed` error naming the command. */
export async function git(args: readonly string[], options: GitCommandOptions): Promise<string> {
  const result = await tryGit(args, options);
  if (result.exitCode !== 0) {
    throw new AgentRunnerError(
      'workspace_failed',
      `git ${args.join(' ')} failed in ${options.cwd} (exit ${result.exitCode}): ${result.stderr.trim()}`,
      { details: { args, cwd: options.cwd, exitCode: result.exitCode, stderr: result.stderr } },
    );
  }
  return result.stdout;
}

/** Splits NUL-separated git output (`-z`), dropping the empty tail. */
export function splitNul(text: string): string[] {
  return text.split('\0').filter((part) => part.length > 0);
}
