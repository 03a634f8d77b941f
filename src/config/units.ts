/** Parsing of the human units used in agent-runner.yaml: durations (`90s`, `20m`, `2h`) and sizes (`512m`, `4g`). */

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const SIZE_UNITS: Record<string, number> = { b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** `"20m"` → 1_200_000. A bare number is seconds. Returns undefined when the text is not a duration. */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? value * 1000 : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(value);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = DURATION_UNITS[(match[2] ?? 's').toLowerCase()];
  if (unit === undefined || amount <= 0) return undefined;
  return Math.round(amount * unit);
}

/** `"4g"` → 4294967296. A bare number is bytes. Returns undefined when the text is not a size. */
export function parseSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value > 0 ? value : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([bkmg])?b?\s*$/i.exec(value);
  if (!match) return undefined;
  const unit = SIZE_UNITS[(match[2] ?? 'b').toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.round(Number(match[1]) * unit);
  return bytes > 0 ? bytes : undefined;
}

/** 1_200_000 → "20m"; used in messages and notes. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)}s`;
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds % 60);
  if (minutes < 60) return rest ? `${minutes}m${rest}s` : `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h${minutes % 60 ? `${minutes % 60}m` : ''}`;
}

/** 67_108_864 → "64 MiB"; used in messages and notes (binary units, like the sizes the config takes). */
export function formatSize(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${bytes} bytes`;
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}
