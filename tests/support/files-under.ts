/** Every regular file under a directory with its text, for tests that look for a value in what was written. */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Every regular file under `dir`, read as `encoding` (latin1: byte for byte, so a database's text is found
 * as it is stored). Links are not followed: what they point at is not under `dir` (the worker's state holds a
 * link into its image, absent on the host).
 */
export function filesUnder(dir: string, encoding: BufferEncoding = 'utf8'): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    const stats = lstatSync(full);
    if (stats.isDirectory()) out.push(...filesUnder(full, encoding));
    else if (stats.isFile()) out.push({ file: full, text: readFileSync(full, encoding) });
  }
  return out;
}
