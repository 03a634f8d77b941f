/**
 * `agent-runner control migrate`: brings a PostgreSQL database to the control plane's schema. Idempotent.
 *   1. our tables (schema agent_runner) with node-pg-migrate, from the SQL files in migrations/control/
 *   2. pg-boss's own schema (pgboss), migrated by pg-boss itself, and the `tasks` queue
 *   3. the role nodes connect with, agent_runner_node, with only what a node needs (see docs/architecture.md)
 * Run it with a role that may create schemas and roles (the database's owner or a superuser).
 */
import path from 'node:path';
import { runner } from 'node-pg-migrate';
import PgBoss from 'pg-boss';
import { PACKAGE_ROOT } from '../version.js';
import { CONTROL_SCHEMA, NODE_ROLE, QUEUE_SCHEMA, type ControlDatabase } from './control-database.js';
import { TASK_QUEUE, TASK_QUEUE_OPTIONS } from './task-queue-options.js';

export const MIGRATIONS_DIR = path.join(PACKAGE_ROOT, 'migrations', 'control');

export interface MigrateResult {
  /** Migrations of our tables run now (empty: already up to date). */
  applied: string[];
  /** pg-boss's schema version after the run. */
  queueSchemaVersion: number;
  /** Whether the node role can log in (a password was given now or earlier). */
  nodeRole: { name: string; canLogin: boolean };
}

/** Runs the three steps; `nodePassword` (from AGENT_RUNNER_NODE_PASSWORD) lets the node role log in. */
export async function migrateControl(
  database: ControlDatabase,
  options: { nodePassword?: string; log?: (line: string) => void } = {},
): Promise<MigrateResult> {
  const client = await database.pool.connect();
  let applied: string[];
  try {
    const migrations = await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: 'migrations',
      migrationsSchema: CONTROL_SCHEMA,
      createMigrationsSchema: true,
      checkOrder: true,
      log: options.log ?? (() => undefined),
      logger: {
        debug: () => undefined,
        info: () => undefined,
        warn: () => undefined,
        error: () => undefined,
      },
    });
    applied = migrations.map((migration) => migration.name);
  } finally {
    client.release();
  }

  const boss = new PgBoss({
    connectionString: database.url.url,
    schema: QUEUE_SCHEMA,
    migrate: true,
    supervise: false,
    schedule: false,
    max: 2,
  });
  boss.on('error', () => undefined);
  await boss.start();
  let queueSchemaVersion: number;
  try {
    if ((await boss.getQueue(TASK_QUEUE)) === null) await boss.createQueue(TASK_QUEUE, TASK_QUEUE_OPTIONS);
    else await boss.updateQueue(TASK_QUEUE, TASK_QUEUE_OPTIONS);
    queueSchemaVersion = Number(await boss.schemaVersion());
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }

  const canLogin = await grantNodeRole(database, options.nodePassword);
  return { applied, queueSchemaVersion, nodeRole: { name: NODE_ROLE, canLogin } };
}

/**
 * The node role: created once per server (roles are cluster-wide; two migrations at once may race, hence the
 * duplicate_object guard), granted per database. A node reads and writes rows (nodes, tasks, events, pg-boss's
 * jobs) and calls pg-boss's functions; it creates, alters and drops nothing.
 */
async function grantNodeRole(database: ControlDatabase, password: string | undefined): Promise<boolean> {
  const { pool } = database;
  await clusterWide(() =>
    pool.query(`DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${NODE_ROLE}') THEN CREATE ROLE ${NODE_ROLE} NOLOGIN; END IF;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`),
  );
  if (password !== undefined && password !== '') {
    // ALTER ROLE takes no bind parameters: the password goes in as a quoted literal built by the server.
    const { rows } = await pool.query<{ literal: string }>('SELECT quote_literal($1) AS literal', [password]);
    await clusterWide(() => pool.query(`ALTER ROLE ${NODE_ROLE} LOGIN PASSWORD ${rows[0]?.literal ?? "''"}`));
  }
  await clusterWide(() =>
    pool.query(
      `DO $$ BEGIN EXECUTE format('GRANT CONNECT ON DATABASE %I TO ${NODE_ROLE}', current_database()); END $$`,
    ),
  );
  for (const statement of [
    `GRANT USAGE ON SCHEMA ${CONTROL_SCHEMA}, ${QUEUE_SCHEMA} TO ${NODE_ROLE}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON agent_runner.nodes TO ${NODE_ROLE}`,
    `GRANT SELECT, INSERT, UPDATE ON agent_runner.tasks, agent_runner.events TO ${NODE_ROLE}`,
    `GRANT SELECT, INSERT, UPDATE ON agent_runner.task_requests TO ${NODE_ROLE}`,
    `GRANT USAGE ON SEQUENCE agent_runner.task_requests_id_seq TO ${NODE_ROLE}`,
    // Tokens: a node checks them, marks them used, and (an admin's call) creates and revokes them; never deletes.
    `GRANT SELECT, INSERT, UPDATE ON agent_runner.api_tokens TO ${NODE_ROLE}`,
    // The audit log: a node adds to it and reads it; it changes and deletes nothing of it.
    `GRANT SELECT, INSERT ON agent_runner.audit TO ${NODE_ROLE}`,
    `GRANT USAGE ON SEQUENCE agent_runner.audit_id_seq TO ${NODE_ROLE}`,
    // Webhook deliveries: a node takes one by inserting its id; it changes and deletes none.
    `GRANT SELECT, INSERT ON agent_runner.webhook_deliveries TO ${NODE_ROLE}`,
    `REVOKE ALL ON ${CONTROL_SCHEMA}.migrations FROM ${NODE_ROLE}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${QUEUE_SCHEMA} TO ${NODE_ROLE}`,
    `GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ${QUEUE_SCHEMA} TO ${NODE_ROLE}`,
  ])
    await pool.query(statement);
  const { rows } = await pool.query<{ rolcanlogin: boolean }>(
    'SELECT rolcanlogin FROM pg_roles WHERE rolname = $1',
    [NODE_ROLE],
  );
  return rows[0]?.rolcanlogin ?? false;
}

/**
 * A statement on a cluster-wide catalog row (the role, the database's ACL). Two migrations at once (two
 * databases on one server, or two admins) update the same row, and PostgreSQL refuses the second with
 * "tuple concurrently updated" (XX000) instead of waiting. No lock spans databases (advisory locks are per
 * database), so the statement is tried again; each is idempotent.
 */
async function clusterWide(statement: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await statement();
      return;
    } catch (error) {
      if (attempt >= CLUSTER_WIDE_ATTEMPTS || !isConcurrentCatalogUpdate(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt + Math.floor(Math.random() * 30)));
    }
  }
}

const CLUSTER_WIDE_ATTEMPTS = 8;

export function isConcurrentCatalogUpdate(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'XX000' && typeof message === 'string' && message.includes('tuple concurrently updated');
}
