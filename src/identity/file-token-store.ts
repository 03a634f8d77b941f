/**
 * The tokens of one server: `.agent-runner/tokens.json` in the repository's state directory (mode 0600),
 * rewritten whole and atomically (write-file-atomic) under a lock (proper-lockfile), so two `token` commands
 * at once lose nothing. When each token was last used goes to a file of its own, `tokens-used.json`, written by
 * servers without the lock: a server's write can never undo a revoke.
 */
import { readFile, stat } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import writeFileAtomic from 'write-file-atomic';
import * as z from 'zod';
import { UserError } from '../errors.js';
import { newToken } from './api-token.js';
import type { Role } from './roles.js';
import {
  NameTakenError,
  storedTokenSchema,
  type StoredToken,
  type TokenRecord,
  type TokenStore,
} from './token-store.js';

export const TOKENS_FILE = 'tokens.json';
export const TOKENS_USED_FILE = 'tokens-used.json';

const fileSchema = z.object({ version: z.literal(1), tokens: z.array(storedTokenSchema) });

function recordOf(token: StoredToken, lastUsedAt: string | null): TokenRecord {
  const { hash: _hash, ...record } = token;
  return { ...record, lastUsedAt: lastUsedAt ?? record.lastUsedAt };
}

export class FileTokenStore implements TokenStore {
  readonly where: string;
  private readonly file: string;
  private readonly usedFile: string;
  /** The file as last read, with what identifies that version of it (a rewrite is a new inode). */
  private cached: { key: string; tokens: StoredToken[] } | null = null;

  constructor(private readonly stateDir: string) {
    this.file = path.join(stateDir, TOKENS_FILE);
    this.usedFile = path.join(stateDir, TOKENS_USED_FILE);
    this.where = this.file;
  }

  async create(name: string, role: Role): Promise<{ token: string; record: TokenRecord }> {
    const made = await newToken();
    const stored: StoredToken = {
      id: made.id,
      name,
      role,
      createdAt: new Date().toISOString(),
      lastUsedAt: null,
      revokedAt: null,
      hash: made.hash,
    };
    await this.change((tokens) => {
      if (tokens.some((token) => token.name === name && token.revokedAt === null))
        throw new NameTakenError(name, this.where);
      tokens.push(stored);
    });
    return { token: made.token, record: recordOf(stored, null) };
  }

  async list(): Promise<TokenRecord[]> {
    const [tokens, used] = await Promise.all([this.read(), this.readUsed()]);
    return tokens.map((token) => recordOf(token, used[token.id] ?? null));
  }

  async revoke(name: string): Promise<TokenRecord | null> {
    let revoked: StoredToken | null = null;
    await this.change((tokens) => {
      const token = tokens.find((candidate) => candidate.name === name && candidate.revokedAt === null);
      if (token === undefined) return;
      token.revokedAt = new Date().toISOString();
      revoked = token;
    });
    return revoked === null ? null : recordOf(revoked, null);
  }

  /** Reads the file when it changed since the last read (a stat per call: a revoke is seen at once). */
  async find(id: string): Promise<StoredToken | null> {
    return (await this.read()).find((token) => token.id === id) ?? null;
  }

  async touch(id: string, at: Date): Promise<void> {
    const used = await this.readUsed();
    used[id] = at.toISOString();
    await writeFileAtomic(this.usedFile, `${JSON.stringify(used)}\n`, { mode: 0o600 });
  }

  private async read(): Promise<StoredToken[]> {
    const info = await stat(this.file).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (info === null) return [];
    const key = `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
    if (this.cached?.key === key) return this.cached.tokens;
    const text = await readFile(this.file, 'utf8');
    let parsed;
    try {
      parsed = fileSchema.safeParse(JSON.parse(text));
    } catch {
      parsed = null;
    }
    if (!parsed?.success)
      throw new UserError(
        'config_invalid',
        `${this.file} is not a token file agent-runner wrote: restore it, or remove it and create the tokens again.`,
      );
    this.cached = { key, tokens: parsed.data.tokens };
    return parsed.data.tokens;
  }

  private async readUsed(): Promise<Record<string, string>> {
    const text = await readFile(this.usedFile, 'utf8').catch(() => '{}');
    try {
      const parsed = z.record(z.string(), z.string()).safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : {};
    } catch {
      return {};
    }
  }

  /** Read, change, write back, under the lock. */
  private async change(apply: (tokens: StoredToken[]) => void): Promise<void> {
    mkdirSync(this.stateDir, { recursive: true });
    const release = await lockfile.lock(this.stateDir, {
      lockfilePath: `${this.file}.lock`,
      retries: { retries: 20, minTimeout: 50, maxTimeout: 500 },
      stale: 10_000,
    });
    try {
      this.cached = null;
      const tokens = structuredClone(await this.read());
      apply(tokens);
      await writeFileAtomic(this.file, `${JSON.stringify({ version: 1, tokens }, null, 2)}\n`, {
        mode: 0o600,
      });
    } finally {
      await release();
    }
  }
}
