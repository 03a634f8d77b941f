/**
 * Typed errors. Every error the user can see carries a stable `code`, a message that says how to fix it,
 * and an exit code. Only `src/cli/main.ts` catches them, prints them and exits.
 */

/** Stable error codes; documented in the README's exit-code table. */
export type ErrorCode =
  | 'usage'
  | 'config_invalid'
  | 'prd_invalid'
  | 'repository_invalid'
  | 'docker_unavailable'
  | 'image_missing'
  | 'image_build_failed'
  | 'preflight_failed'
  | 'model_unreachable'
  | 'model_http_error'
  | 'model_timeout'
  | 'protocol_invalid'
  | 'worker_timeout'
  | 'worker_failed'
  | 'sandbox_failed'
  | 'workspace_failed'
  | 'task_locked'
  | 'task_not_found'
  | 'journal_invalid'
  | 'replay_diverged'
  | 'budget_exceeded'
  | 'disk_full'
  | 'interrupted'
  | 'remote_failed'
  | 'delivery_failed'
  | 'verify_failed'
  | 'control_unreachable'
  | 'internal';

/** Exit codes of the CLI. Kept in one place so the README table and the code cannot disagree. */
export const EXIT_CODES = {
  complete: 0,
  failed: 1,
  usage: 2,
  needsReview: 3,
  environment: 4,
  model: 5,
  /** The task's result stands on its local branch, but pushing it or opening its pull request failed. */
  delivery: 6,
  timeout: 124,
  interrupted: 130,
} as const;

export interface AgentRunnerErrorOptions {
  details?: Record<string, unknown>;
  cause?: unknown;
  retryable?: boolean;
  exitCode?: number;
}

/** Base of every error agent-runner raises on purpose. */
export class AgentRunnerError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  readonly retryable: boolean;
  readonly exitCode: number;

  constructor(code: ErrorCode, message: string, options: AgentRunnerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details ?? {};
    this.retryable = options.retryable ?? false;
    this.exitCode = options.exitCode ?? EXIT_CODES.failed;
  }
}

/** Fixable by the user; the message says how. */
export class UserError extends AgentRunnerError {
  constructor(code: ErrorCode, message: string, options: AgentRunnerErrorOptions = {}) {
    super(code, message, { exitCode: EXIT_CODES.usage, ...options });
  }
}

/** The environment (Docker engine, disk, image) is not in a state to run; the message says how to fix it. */
export class EnvironmentError extends AgentRunnerError {
  constructor(code: ErrorCode, message: string, options: AgentRunnerErrorOptions = {}) {
    super(code, message, { exitCode: EXIT_CODES.environment, ...options });
  }
}

/** The model (Meta-agent endpoint) misbehaved: unreachable, HTTP errors, replies that stay invalid after repair. */
export class ModelBehaviorError extends AgentRunnerError {
  constructor(code: ErrorCode, message: string, options: AgentRunnerErrorOptions = {}) {
    super(code, message, { exitCode: EXIT_CODES.model, ...options });
  }
}

/** A bug in agent-runner itself. */
export class InternalError extends AgentRunnerError {
  constructor(message: string, options: AgentRunnerErrorOptions = {}) {
    super('internal', message, { exitCode: EXIT_CODES.failed, ...options });
  }
}

export function isAgentRunnerError(error: unknown): error is AgentRunnerError {
  return error instanceof AgentRunnerError;
}
