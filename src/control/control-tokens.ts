/**
 * The fleet's named tokens and audit log in the control database (agent_runner.api_tokens, agent_runner.audit):
 * the same ports as one server's files (src/identity/), so any node accepts any token and every node's calls
 * are in one log. A token's record is read on every request (one indexed lookup): a revoke is refused by the
 * next request on every node, with nothing cached to clear.
 */
import { newToken } from '../identity/api-token.js';
import type { AuditLog, AuditRecord } from '../identity/audit-entry.js';
import type { Role } from '../identity/roles.js';
import {
  NameTakenError,
  type StoredToken,
  type TokenRecord,
  type TokenStore,
} from '../identity/token-store.js';
import type { ControlDatabase } from './control-database.js';

interface TokenRow {
  id: string;
  name: string;
  role: Role;
  hash: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const COLUMNS = 'id, name, role, hash, created_at, last_used_at, revoked_at';

function storedOf(row: TokenRow): StoredToken {
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    hash: row.hash,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
  };
}

function recordOf(row: TokenRow): TokenRecord {
  const { hash: _hash, ...record } = storedOf(row);
  return record;
}

export class ControlTokenStore implements TokenStore {
  readonly where: string;

  constructor(private readonly database: ControlDatabase) {
    this.where = `the control database at ${database.url.shown}`;
  }

  async create(name: string, role: Role): Promise<{ token: string; record: TokenRecord }> {
    const made = await newToken();
    try {
      const { rows } = await this.database.pool.query<TokenRow>(
        `INSERT INTO agent_runner.api_tokens (id, name, role, hash) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
        [made.id, name, role, made.hash],
      );
      return { token: made.token, record: recordOf(rows[0] as TokenRow) };
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw new NameTakenError(name, this.where);
      throw error;
    }
  }

  async list(): Promise<TokenRecord[]> {
    const { rows } = await this.database.pool.query<TokenRow>(
      `SELECT ${COLUMNS} FROM agent_runner.api_tokens ORDER BY created_at, id`,
    );
    return rows.map(recordOf);
  }

  async revoke(name: string): Promise<TokenRecord | null> {
    const { rows } = await this.database.pool.query<TokenRow>(
      `UPDATE agent_runner.api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
      [name],
    );
    return rows[0] ? recordOf(rows[0]) : null;
  }

  async find(id: string): Promise<StoredToken | null> {
    const { rows } = await this.database.pool.query<TokenRow>(
      `SELECT ${COLUMNS} FROM agent_runner.api_tokens WHERE id = $1`,
      [id],
    );
    return rows[0] ? storedOf(rows[0]) : null;
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.database.pool.query('UPDATE agent_runner.api_tokens SET last_used_at = $2 WHERE id = $1', [
      id,
      at,
    ]);
  }
}

interface AuditRow {
  at: Date;
  actor_name: string;
  actor_role: Role;
  action: AuditRecord['action'];
  task_id: string | null;
  token_name: string | null;
  remote: string;
  status: number;
  node_id: string | null;
}

export class ControlAuditLog implements AuditLog {
  constructor(private readonly database: ControlDatabase) {}

  async append(record: AuditRecord): Promise<void> {
    await this.database.pool.query(
      `INSERT INTO agent_runner.audit (at, actor_name, actor_role, action, task_id, token_name, remote, status, node_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        record.at,
        record.actor.name,
        record.actor.role,
        record.action,
        record.taskId ?? null,
        record.tokenName ?? null,
        record.from,
        record.status,
        record.node ?? null,
      ],
    );
  }

  async list(options: { since?: Date } = {}): Promise<AuditRecord[]> {
    const { rows } = await this.database.pool.query<AuditRow>(
      `SELECT at, actor_name, actor_role, action, task_id, token_name, remote, status, node_id
         FROM agent_runner.audit WHERE $1::timestamptz IS NULL OR at >= $1 ORDER BY at, id`,
      [options.since ?? null],
    );
    return rows.map((row) => ({
      at: row.at.toISOString(),
      actor: { name: row.actor_name, role: row.actor_role },
      action: row.action,
      ...(row.task_id !== null ? { taskId: row.task_id } : {}),
      ...(row.token_name !== null ? { tokenName: row.token_name } : {}),
      from: row.remote,
      status: row.status,
      ...(row.node_id !== null ? { node: row.node_id } : {}),
    }));
  }
}
