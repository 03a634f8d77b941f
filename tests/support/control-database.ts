/**
 * A database of its own for a test file, on the PostgreSQL that scripts/postgres.sh starts (installing it when
 * missing, as CI's clean machine needs): CREATE DATABASE with a random name; `drop()` removes it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** The superuser's URL of the local PostgreSQL, started now if it is not running. */
export async function adminUrl(): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [path.join(ROOT, 'scripts', 'postgres.sh')], {
    timeout: 600_000,
  });
  const url = stdout.trim().split('\n').at(-1) ?? '';
  if (!url.startsWith('postgres://')) throw new Error('scripts/postgres.sh did not print a postgres:// URL');
  return url;
}

/** Stops the local PostgreSQL (the database away mid-task); `adminUrl()` starts it again. */
export async function stopPostgres(): Promise<void> {
  await promisify(execFile)('bash', [path.join(ROOT, 'scripts', 'postgres.sh'), 'stop'], {
    timeout: 120_000,
  });
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

export async function createTestDatabase(): Promise<TestDatabase> {
  const admin = await adminUrl();
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
