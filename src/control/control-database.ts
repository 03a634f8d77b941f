/**
 * The connection to the control plane's PostgreSQL (node-postgres): one small pool per process, with a
 * connect timeout so that a database that is away is told in seconds, not after the OS's TCP timeout.
 */
import pg from 'pg';
import { AgentRunnerError, EXIT_CODES } from '../errors.js';
import type { ControlUrl } from './control-url.js';

/** Our own tables live in this schema; pg-boss keeps its own, {@link QUEUE_SCHEMA}. */
export const CONTROL_SCHEMA = 'agent_runner';
/** pg-boss's schema (its default name, named here so every place agrees). */
export const QUEUE_SCHEMA = 'pgboss';
/** The role a node connects with: only the grants a node needs (see `control migrate`). */
export const NODE_ROLE = 'agent_runner_node';

const CONNECT_TIMEOUT_MS = 5_000;

/** A pool on the control database; {@link close} ends it. */
export interface ControlDatabase {
  readonly pool: pg.Pool;
  readonly url: ControlUrl;
  close(): Promise<void>;
}

/** The database cannot be reached (down, wrong address, wrong password): exit 4, the message says what to check. */
export function controlUnreachable(url: ControlUrl, error: unknown): AgentRunnerError {
  const reason = error instanceof Error ? error.message : String(error);
  return new AgentRunnerError(
    'control_unreachable',
    `Cannot reach the control database at ${url.shown}: ${reason}. Check that PostgreSQL runs there ` +
      '(bash scripts/postgres.sh starts a local one) and that the URL, user and password are right.',
    { exitCode: EXIT_CODES.environment, cause: error, retryable: true },
  );
}

/** Opens a pool and proves it answers (one `SELECT 1`); throws {@link controlUnreachable} when it does not. */
export async function openControlDatabase(
  url: ControlUrl,
  options: { max?: number; applicationName?: string } = {},
): Promise<ControlDatabase> {
  const pool = new pg.Pool({
    connectionString: url.url,
    max: options.max ?? 4,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: options.applicationName ?? 'agent-runner',
  });
  // An idle client whose server went away emits 'error' on the pool; unhandled, it would end the process.
  pool.on('error', () => undefined);
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw controlUnreachable(url, error);
  }
  return { pool, url, close: () => pool.end() };
}
