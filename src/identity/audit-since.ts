/** `--since` / `?since=` of the audit log: a duration back from now (`90m`, `12h`, `7d`) or a time (ISO 8601). */
import { parseDuration } from '../config/units.js';

/** The time meant, or null when the text is neither a duration nor a time. */
export function parseSince(text: string, now: Date = new Date()): Date | null {
  const days = /^\s*(\d+(?:\.\d+)?)\s*d\s*$/i.exec(text);
  const ms = days ? Number(days[1]) * 86_400_000 : parseDuration(text);
  if (ms !== undefined && ms > 0) return new Date(now.getTime() - ms);
  // A bare number is a duration in seconds above; a time needs a date.
  if (!/^\d{4}-\d{2}-\d{2}/.test(text.trim())) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : new Date(at);
}
