/**
 * Who a request's token names. The server's own start-up token (printed by `serve`, kept in serve.json) is the
 * admin `server`; a named token is looked up by its public id in the store, read on every request (a revoked
 * token is refused by the next request, on every server that reads the store), and its secret checked with
 * scrypt. A secret checked once is remembered as its SHA-256 next to the stored hash it matched, so a page
 * polling every second costs one lookup, not one scrypt, per request; the memory never decides alone: the
 * record (and whether it is revoked) is read each time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { parseToken, secretMatches } from './api-token.js';
import type { Actor } from './roles.js';
import type { TokenStore } from './token-store.js';

/** The name the server's own start-up token goes by in the audit log. */
export const SERVER_TOKEN_NAME = 'server';
/** How often a token's `lastUsedAt` is written at most. */
const TOUCH_EVERY_MS = 60_000;
const MAX_REMEMBERED = 1_000;

function sameText(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export class TokenAuthenticator {
  /** Per token id: the stored hash a secret matched, and that secret's SHA-256. */
  private readonly checked = new Map<string, { hash: string; digest: Buffer }>();
  private readonly touched = new Map<string, number>();

  constructor(private readonly options: { serverToken?: string; store?: TokenStore; now?: () => Date }) {}

  /** The caller, or null when the token is missing, unknown, wrong or revoked. */
  async authenticate(given: string | undefined): Promise<Actor | null> {
    if (given === undefined || given === '') return null;
    const { serverToken, store } = this.options;
    if (serverToken !== undefined && sameText(given, serverToken))
      return { name: SERVER_TOKEN_NAME, role: 'admin' };
    const parsed = parseToken(given);
    if (parsed === null || store === undefined) return null;
    const stored = await store.find(parsed.id);
    if (stored === null || stored.revokedAt !== null) {
      this.checked.delete(parsed.id);
      return null;
    }
    const digest = sha256(parsed.secret);
    const known = this.checked.get(parsed.id);
    const matches =
      known !== undefined && known.hash === stored.hash
        ? timingSafeEqual(known.digest, digest)
        : await secretMatches(parsed.secret, stored.hash);
    if (!matches) return null;
    if (this.checked.size >= MAX_REMEMBERED) this.checked.clear();
    this.checked.set(parsed.id, { hash: stored.hash, digest });
    this.touch(store, parsed.id);
    return { name: stored.name, role: stored.role };
  }

  private touch(store: TokenStore, id: string): void {
    const now = this.options.now?.() ?? new Date();
    if (now.getTime() - (this.touched.get(id) ?? 0) < TOUCH_EVERY_MS) return;
    if (this.touched.size >= MAX_REMEMBERED) this.touched.clear();
    this.touched.set(id, now.getTime());
    void store.touch(id, now).catch(() => undefined);
  }
}
