import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { runCliCaptured } from '../support/cli.js';

describe('cli shell', () => {
  it('prints the version', async () => {
    const result = await runCliCaptured(['--version']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toBe(VERSION);
  });

  it('prints help', async () => {
    const result = await runCliCaptured(['--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Usage: agent-runner');
  });

  it('exits 2 on an unknown option', async () => {
    const result = await runCliCaptured(['--frobnicate']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain("unknown option '--frobnicate'");
  });
});
