/**
 * A database of its own for a test file, on the PostgreSQL that scripts/postgres.sh starts (installing it when
 * missing, as CI's clean machine needs): CREATE DATABASE with a random name; `drop()` removes it. A test that
 * takes the database away mid-task gets a PostgreSQL server of its own (`privatePostgres`): the shared one
 * serves the other files running beside it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { openControlDatabase, type ControlDatabase } from '../../src/control/control-database.js';
import { controlUrl } from '../../src/control/control-url.js';
import type { FleetTask, FleetTaskRunner } from '../../src/control/fleet-node.js';
import { migrateControl } from '../../src/control/migrate-control.js';
import { Redaction } from '../../src/notes/redact.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** The superuser's URL of the local PostgreSQL, started now if it is not running. */
export async function adminUrl(): Promise<string> {
  return postgresScript({}, 'start');
}

async function postgresScript(env: NodeJS.ProcessEnv, action: 'start' | 'stop'): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [path.join(ROOT, 'scripts', 'postgres.sh'), action], {
    timeout: 600_000,
    env: { ...process.env, ...env },
  });
  if (action === 'stop') return '';
  const url = stdout.trim().split('\n').at(-1) ?? '';
  if (!url.startsWith('postgres://')) throw new Error('scripts/postgres.sh did not print a postgres:// URL');
  return url;
}

/** A PostgreSQL server of a test's own (scripts/postgres.sh on a free port and a temporary directory). */
export interface PrivatePostgres {
  adminUrl: string;
  /** Stops the server (the database away mid-task); `start()` brings it back on the same port and data. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it and removes its files. */
  remove(): Promise<void>;
}

export async function privatePostgres(): Promise<PrivatePostgres> {
  const root = mkdtempSync(path.join(tmpdir(), 'ar-pg-'));
  const env = { AGENT_RUNNER_PG_ROOT: root, AGENT_RUNNER_PG_PORT: String(await freePort()) };
  const url = await postgresScript(env, 'start');
  return {
    adminUrl: url,
    stop: async () => void (await postgresScript(env, 'stop')),
    start: async () => void (await postgresScript(env, 'start')),
    remove: async () => {
      await postgresScript(env, 'stop');
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

export interface TestDatabase {
  /** The superuser's URL of this database. */
  url: string;
  /** The same database as the node role (after `control migrate` with `nodePassword`). */
  nodeUrl: string;
  nodePassword: string;
  name: string;
  drop(): Promise<void>;
}

/** The node role's password in tests: one for the whole server (roles are cluster-wide). */
export const TEST_NODE_PASSWORD = 'node-password-for-tests';

/** A database on the shared PostgreSQL, or on the server whose superuser's URL is `admin`. */
export async function createTestDatabase(admin?: string): Promise<TestDatabase> {
  admin ??= await adminUrl();
  const name = `ar_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const nodeUrl = new URL(url);
  nodeUrl.username = 'agent_runner_node';
  nodeUrl.password = TEST_NODE_PASSWORD;
  return {
    url: url.toString(),
    nodeUrl: nodeUrl.toString(),
    nodePassword: TEST_NODE_PASSWORD,
    name,
    drop: async () => {
      const dropper = new pg.Client({ connectionString: admin });
      await dropper.connect();
      await dropper.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await dropper.end();
    },
  };
}

/** A database of its own, migrated by its superuser (`control migrate` with the tests' node password), closed. */
export async function createMigratedDatabase(): Promise<TestDatabase> {
  const db = await createTestDatabase();
  const admin = await openControlDatabase(controlUrl(db.url, new Redaction()));
  await migrateControl(admin, { nodePassword: db.nodePassword });
  await admin.close();
  return db;
}

/**
 * A database of its own, migrated by its superuser (`control migrate` with the tests' node password), with the
 * connections a file opens on it: `admin`, and `node()` for each node's connection as the node role.
 * `close()` closes every connection opened here, then drops the database.
 */
export interface MigratedTestDatabase {
  db: TestDatabase;
  admin: ControlDatabase;
  node(): Promise<ControlDatabase>;
  close(): Promise<void>;
}

export async function migratedTestDatabase(admin?: string): Promise<MigratedTestDatabase> {
  const db = await createTestDatabase(admin);
  const opened: ControlDatabase[] = [];
  const open = async (url: string) => {
    const database = await openControlDatabase(controlUrl(url, new Redaction()));
    opened.push(database);
    return database;
  };
  const adminDatabase = await open(db.url);
  await migrateControl(adminDatabase, { nodePassword: db.nodePassword });
  return {
    db,
    admin: adminDatabase,
    node: () => open(db.nodeUrl),
    close: async () => {
      for (const database of opened.reverse()) await database.close();
      await db.drop();
    },
  };
}

/** A node's runner that records every task the node gives it (a follow-up included) and ends it COMPLETE at once. */
export class RecordingRunner implements FleetTaskRunner {
  readonly ran: FleetTask[] = [];
  async run(task: FleetTask) {
    this.ran.push(task);
    return { state: 'COMPLETE', exitCode: 0 };
  }
  async abandon() {}
}
