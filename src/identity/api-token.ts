/**
 * A named token: `art_<id>_<secret>`. The id (12 hex characters) is public: it finds the token's record with
 * one lookup, so a request costs one scrypt at most, never one per stored token. The secret (32 random
 * bytes, base64url) is kept only as its scrypt hash with a salt of its own, and compared in constant time.
 */
import { randomBytes, scrypt, timingSafeEqual, type BinaryLike, type ScryptOptions } from 'node:crypto';

/** What every named token starts with (so a scanner for leaked secrets can know it). */
export const TOKEN_PREFIX = 'art_';
const TOKEN_PATTERN = /^art_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;
const KEY_LENGTH = 32;
/** scrypt's cost: N = 2^14, r = 8 (about 16 MB and a few tens of milliseconds). */
const SCRYPT: ScryptOptions = { N: 16_384, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

function derive(secret: BinaryLike, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(secret, salt, KEY_LENGTH, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** A new token: its id, the token to hand out once, and the hash to store. */
export async function newToken(): Promise<{ id: string; token: string; hash: string }> {
  const id = randomBytes(6).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { id, token: `${TOKEN_PREFIX}${id}_${secret}`, hash: await hashSecret(secret) };
}

/** The stored form of a secret: `scrypt$N$r$p$<salt base64url>$<key base64url>`. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(secret, salt, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

/** The id and secret of a presented token, or null when it is not a named token's shape. */
export function parseToken(given: string): { id: string; secret: string } | null {
  const match = TOKEN_PATTERN.exec(given);
  return match ? { id: match[1] as string, secret: match[2] as string } : null;
}

/** Whether `secret` is the one `stored` was made from (constant-time on the derived keys). */
export async function secretMatches(secret: string, stored: string): Promise<boolean> {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  if (kind !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(secret, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}
