/**
 * A timeout combined with AbortSignal.any still fires after the garbage collector ran: Node 20's own
 * AbortSignal.timeout did not (the wall clock's cut of an observation hung when the process was busy).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** Runs a script in a node with --expose-gc that collects garbage every 20 ms and says whether `any` fired. */
function firedUnderGc(make: string): string {
  const script = `
    ${make}
    const combined = AbortSignal.any([made(200)]);
    let fired = 'no';
    combined.addEventListener('abort', () => { fired = combined.reason?.name ?? 'unnamed'; });
    const collect = setInterval(() => globalThis.gc(), 20);
    setTimeout(() => { clearInterval(collect); console.log(fired); }, 800);
  `;
  const result = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: root, encoding: 'utf8', timeout: 20_000 },
  );
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.trim();
}

describe('timeoutSignal', () => {
  it('the probe sees the collected timeout: AbortSignal.timeout inside AbortSignal.any never fires', () => {
    expect(firedUnderGc('const made = (ms) => AbortSignal.timeout(ms);')).toBe('no');
  });

  it('timeoutSignal inside AbortSignal.any fires with a TimeoutError under the same collections', () => {
    expect(
      firedUnderGc(`const { timeoutSignal: made } = await import('./src/core/timeout-signal.ts');`),
    ).toBe('TimeoutError');
  });
});
