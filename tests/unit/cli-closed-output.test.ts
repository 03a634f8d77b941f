import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const MAIN = path.resolve(import.meta.dirname, '../../src/cli/main.ts');

/** A child writes to a stdout whose reader is gone, then reports on a file descriptor that is still open. */
function writerAfterClosedPipe(guarded: boolean): Promise<{ code: number | null; report: string }> {
  const script = `
    const { ignoreClosedOutput } = await import(${JSON.stringify(MAIN)});
    if (${guarded}) { ignoreClosedOutput(process.stdout); ignoreClosedOutput(process.stderr); }
    const fs = await import('node:fs');
    const line = 'x'.repeat(1000) + '\\n';
    for (let i = 0; i < 200; i += 1) { process.stdout.write(line); await new Promise((r) => setTimeout(r, 2)); }
    fs.writeSync(3, 'still running\\n');
    process.exit(0);`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'ignore', 'pipe'],
    });
    // The reader reads one chunk and goes away, as `| head -1` does.
    child.stdout?.once('data', () => child.stdout?.destroy());
    let report = '';
    child.stdio[3]?.on('data', (chunk: Buffer) => (report += chunk.toString()));
    child.on('close', (code) => resolve({ code, report }));
  });
}

describe('a closed stdout', () => {
  it('does not kill the process (and without the guard it would: the probe sees the crash)', async () => {
    const unguarded = await writerAfterClosedPipe(false);
    expect(unguarded.report).toBe('');
    expect(unguarded.code).not.toBe(0);
    const guarded = await writerAfterClosedPipe(true);
    expect(guarded).toEqual({ code: 0, report: 'still running\n' });
  }, 30_000);
});
