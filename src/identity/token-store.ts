/**
 * Where named tokens live: a port with two adapters, a file in the state directory for one server
 * (file-token-store.ts) and a table of the control database for a fleet (src/control/control-tokens.ts).
 * A store keeps each token's hash, never the token; `find` reads the store each time it is asked, so a revoke
 * is seen by the next request of every server that reads the same store.
 */
import * as z from 'zod';
import { UserError } from '../errors.js';
import { roleSchema, type Role } from './roles.js';

/** What `token list` shows of a token (never the token, never its hash). */
export const tokenRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  role: roleSchema,
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export type TokenRecord = z.infer<typeof tokenRecordSchema>;

/** A token as stored: its record and its hash (see api-token.ts). */
export const storedTokenSchema = tokenRecordSchema.extend({ hash: z.string() });
export type StoredToken = z.infer<typeof storedTokenSchema>;

export interface TokenStore {
  /** Where the tokens are, for messages (a path, or the database's URL without its password). */
  readonly where: string;
  /** Stores a new token (its name not held by another token that is not revoked); returns it once. */
  create(name: string, role: Role): Promise<{ token: string; record: TokenRecord }>;
  /** Every token, the revoked ones too, oldest first. */
  list(): Promise<TokenRecord[]>;
  /** Revokes the token of that name that is not revoked yet; its record, or null when there is none. */
  revoke(name: string): Promise<TokenRecord | null>;
  /** The token of that public id, read now. */
  find(id: string): Promise<StoredToken | null>;
  /** Records that the token was used at `at` (best effort). */
  touch(id: string, at: Date): Promise<void>;
}

/** A name that a live token holds already (exit 2: revoke it or choose another). */
export class NameTakenError extends UserError {
  constructor(
    readonly tokenName: string,
    where: string,
  ) {
    super(
      'usage',
      `A token named ${tokenName} exists already in ${where}: revoke it first (agent-runner token revoke ${tokenName}) or choose another name.`,
    );
  }
}
