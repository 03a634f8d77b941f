/**
 * A forge call that failed, as an error an adapter throws: it carries the {@link ForgeFailure} delivery reports
 * (its kind, the forge's status and message, the permission a 403 names).
 */
import type { ForgeFailure } from './forge-port.js';

export class ForgeError extends Error {
  constructor(readonly failure: ForgeFailure) {
    super(failure.message);
    this.name = 'ForgeError';
  }
}

/** The kind of a forge's HTTP status (after the client's own retries). */
export function failureKindOf(status: number | null): ForgeFailure['kind'] {
  if (status === null) return 'unreachable';
  if (status === 401) return 'auth';
  if (status === 403) return 'permission';
  if (status === 409 || status === 422) return 'exists';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  return 'invalid';
}
