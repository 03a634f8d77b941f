import { describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import type { ExecResult } from '../../src/core/ports.js';
import { describeSetupFailure, setupErrorLine } from '../../src/sandbox/setup-failure.js';
import { homeTmpfsOptions } from '../../src/sandbox/container-options.js';

const EACCES = `npm ERR! code EACCES
npm ERR! syscall mkdir
npm ERR! path /home/agent/.npm
npm ERR! errno -13
npm ERR! Error: EACCES: permission denied, mkdir '/home/agent/.npm'
npm ERR! A complete log of this run can be found in: /home/agent/.npm/_logs/x.log`;

function result(stderrTail: string, extra: Partial<ExecResult> = {}): ExecResult {
  return {
    exitCode: 1,
    signal: null,
    timedOut: false,
    interrupted: false,
    oomKilled: false,
    durationMs: 10,
    stdoutTail: '',
    stderrTail,
    ...extra,
  };
}

describe('set-up failure', () => {
  it.each([
    [EACCES, "npm ERR! Error: EACCES: permission denied, mkdir '/home/agent/.npm'"],
    ['bash: line 1: pnpm: command not found', 'bash: line 1: pnpm: command not found'],
    [
      'Collecting x\nERROR: Could not find a version that satisfies x\n',
      'ERROR: Could not find a version that satisfies x',
    ],
    ['just some output\nlast words', 'last words'],
  ])('picks the line that says what failed', (output, line) => {
    expect(setupErrorLine(output)).toBe(line);
  });

  it('says what to try for the cause, not always the network', () => {
    expect(describeSetupFailure('npm ci', result(EACCES), 'allowlist (registry.npmjs.org)').hint).toMatch(
      /only the workspace, \$HOME and \/tmp are writable/,
    );
    const refused = 'npm ERR! 403 Forbidden: registry.example.com is not in sandbox.allowlist';
    expect(describeSetupFailure('npm ci', result(refused), 'allowlist ()').hint).toMatch(
      /sandbox\.allowlist/,
    );
    expect(describeSetupFailure('pnpm i', result('pnpm: command not found'), 'open').hint).toMatch(
      /sandbox\.dockerfile/,
    );
    const slow = describeSetupFailure('npm ci', result('', { timedOut: true, exitCode: 124 }), 'open');
    expect(slow.summary).toBe(
      'sandbox.setup command `npm ci` did not finish within sandbox.setupTimeout under network policy open',
    );
    expect(slow.hint).toMatch(/sandbox\.setupTimeout/);
    expect(describeSetupFailure('npm ci', result(EACCES), 'open').summary).not.toContain('\n');
  });

  it('the home tmpfs is owned by the worker through uid/gid, which every engine honours', () => {
    expect(homeTmpfsOptions({ uid: 1000, gid: 1001 })).toMatch(/(^|,)uid=1000,gid=1001(,|$)/);
  });
});

describe('sandbox.env', () => {
  it('is passed as text', () => {
    const config = validateConfig([
      {
        source: 'file',
        values: { sandbox: { env: { CI: true, NODE_OPTIONS: '--max-old-space-size=2048' } } },
      },
    ]);
    expect(config.sandbox.env).toEqual({ CI: 'true', NODE_OPTIONS: '--max-old-space-size=2048' });
  });

  it.each([
    'NPM_TOKEN',
    'GITHUB_TOKEN',
    'AWS_SECRET_ACCESS_KEY',
    'OPENAI_API_KEY',
    'MY_MODEL_CREDS_KEY',
    'DB_PASSWORD',
  ])('refuses %s, which looks like a secret', (name) => {
    expect(() =>
      validateConfig([{ source: 'agent-runner.yaml', values: { sandbox: { env: { [name]: 'x' } } } }]),
    ).toThrow(new RegExp(`sandbox\\.env\\.${name}: looks like a secret.*\\(in agent-runner\\.yaml\\)`));
  });

  it("refuses the configured key's variable whatever its name", () => {
    expect(() =>
      validateConfig([
        { source: 'f', values: { meta: { apiKeyEnv: 'LLM_PASS' }, sandbox: { env: { LLM_PASS: 'x' } } } },
      ]),
    ).toThrow(/sandbox\.env\.LLM_PASS: looks like a secret/);
  });
});
