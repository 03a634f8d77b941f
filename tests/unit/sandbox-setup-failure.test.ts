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

describe('set-up failure: hints shared with the checks', () => {
  it('python without pip: install python3-pip or use a venv, not the generic hint', () => {
    const failed = describeSetupFailure(
      'pip install --user -r requirements.txt',
      result('/usr/bin/python3: No module named pip', { exitCode: 1 }),
      'allowlist (pypi.org)',
    );
    expect(failed.errorLine).toBe('/usr/bin/python3: No module named pip');
    expect(failed.hint).toMatch(/python3-pip/);
    expect(failed.hint).toMatch(/python3 -m venv/);
    expect(failed.hint).not.toMatch(/fresh clone/);
  });

  it('reads a coloured error line without its colour', () => {
    const failed = describeSetupFailure(
      'make deps',
      result('\u001b[1m\u001b[31mmake: cc: Command not found\u001b[0m\nnoise', { exitCode: 127 }),
      'open',
    );
    expect(failed.summary).not.toContain('\u001b');
    expect(failed.errorLine).toBe('make: cc: Command not found');
    expect(failed.hint).toMatch(/`cc` is not installed in the sandbox: add its toolchain/);
  });

  it('cuts a long error line at a word, and says so', () => {
    const long = `Error: ${'the registry answered something very long '.repeat(20)}`;
    const line = setupErrorLine(long);
    expect(line.length).toBeLessThanOrEqual(300);
    expect(line.endsWith('…')).toBe(true);
    expect(long.startsWith(line.slice(0, -1))).toBe(true);
    // The cut falls between two words.
    expect(long.startsWith(`${line.slice(0, -1)} `)).toBe(true);
  });
});
