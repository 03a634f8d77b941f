/**
 * Paths an API client names resolve inside the repository or are refused naming the field: absolute paths
 * elsewhere, `..`, a link (the file's own or a parent directory's) leading out, the git directory, what
 * `scope.exclude` keeps out, FIFOs and other non-regular files, files over the bound. Configuration overrides:
 * path keys resolved the same way, owner-only keys refused. Real files, real links, a real FIFO.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { checkApiOverrides } from '../../src/serve/api-config-overrides.js';
import {
  RequestFieldError,
  readRepositoryFile,
  resolveInRepository,
} from '../../src/serve/repository-path.js';

let repo = '';
let outside = '';

beforeAll(() => {
  repo = realpathSync(mkdtempSync(path.join(tmpdir(), 'ar-repo-path-')));
  outside = realpathSync(mkdtempSync(path.join(tmpdir(), 'ar-outside-')));
  writeFileSync(path.join(outside, 'secret.md'), 'outside the repository\n');
  mkdirSync(path.join(repo, 'docs'));
  mkdirSync(path.join(repo, '.git'));
  writeFileSync(path.join(repo, '.git', 'config'), '[remote "origin"]\n');
  writeFileSync(path.join(repo, 'PRD.md'), '# In the repository\n');
  writeFileSync(path.join(repo, '.env'), 'TOKEN=1\n');
  writeFileSync(path.join(repo, 'docs', 'big.md'), 'x'.repeat(2048));
  symlinkSync(path.join(outside, 'secret.md'), path.join(repo, 'link-out.md'));
  symlinkSync('/etc/hostname', path.join(repo, 'hostname.md'));
  symlinkSync(outside, path.join(repo, 'dir-out'));
  symlinkSync('PRD.md', path.join(repo, 'link-in.md'));
  execFileSync('mkfifo', [path.join(repo, 'pipe.md')]);
});

afterAll(() => {
  rmSync(repo, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

/** The error a call throws (it must throw one). */
async function refusal(promise: Promise<unknown>): Promise<RequestFieldError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RequestFieldError);
  return error as RequestFieldError;
}

const file = (given: string) => resolveInRepository(repo, given, { field: 'prdPath', kind: 'file' });

describe('a path an API client names', () => {
  it('resolves a file of the repository (relative, absolute inside, through a link that stays inside)', async () => {
    expect(await file('PRD.md')).toBe(path.join(repo, 'PRD.md'));
    expect(await file(path.join(repo, 'PRD.md'))).toBe(path.join(repo, 'PRD.md'));
    expect(await file('docs/../PRD.md')).toBe(path.join(repo, 'PRD.md'));
    expect(await file('link-in.md')).toBe(path.join(repo, 'PRD.md'));
    const read = await readRepositoryFile(repo, 'PRD.md', { field: 'prdPath', maxBytes: 1024 });
    expect(read.bytes.toString()).toBe('# In the repository\n');
  });

  it.each([
    ['an absolute path elsewhere', '/etc/passwd', 'outside the repository'],
    ['.. out of the repository', '../../../../etc/hostname', 'outside the repository'],
    ['a link to a file outside', 'link-out.md', 'outside the repository'],
    ['a link to /etc/hostname', 'hostname.md', 'outside the repository'],
    ['a file below a linked directory', 'dir-out/secret.md', 'outside the repository'],
    ['a missing file below a linked directory', 'dir-out/nothing.md', 'outside the repository'],
    ['the git directory', '.git/config', 'git directory'],
    ['a FIFO', 'pipe.md', 'not a regular file'],
    ['a directory', 'docs', 'not a regular file'],
    ['a missing file', 'nothing.md', 'does not exist'],
  ])('refuses %s, naming the field', async (_what, given, problem) => {
    const error = await refusal(file(given));
    expect(error.field).toBe('prdPath');
    expect(error.message).toContain(problem);
    // Reading goes through the same check (a FIFO never blocks it).
    expect((await refusal(readRepositoryFile(repo, given, { field: 'prdPath', maxBytes: 1024 }))).field).toBe(
      'prdPath',
    );
  });

  it('refuses what scope.exclude keeps out, and a file over the bound', async () => {
    const excluded = await refusal(
      resolveInRepository(repo, '.env', {
        field: 'modelScript',
        kind: 'file',
        refused: (relative) => relative === '.env',
      }),
    );
    expect(excluded).toMatchObject({ field: 'modelScript' });
    expect(excluded.message).toContain('scope.exclude');
    const big = await refusal(readRepositoryFile(repo, 'docs/big.md', { field: 'prdPath', maxBytes: 1024 }));
    expect(big.message).toContain('the limit is 1024');
  });
});

describe('configuration overrides from an API client', () => {
  it('resolves path keys inside the repository and keeps the rest as given', async () => {
    writeFileSync(path.join(repo, 'Dockerfile'), 'FROM node:22\n');
    const checked = await checkApiOverrides(repo, {
      sandbox: { dockerfile: 'Dockerfile', cpus: 1 },
      patterns: { dirs: ['docs'] },
      limits: { maxIterations: 2 },
    });
    expect(checked).toEqual({
      sandbox: { dockerfile: path.join(repo, 'Dockerfile'), cpus: 1 },
      patterns: { dirs: [path.join(repo, 'docs')] },
      limits: { maxIterations: 2 },
    });
  });

  it.each([
    [{ sandbox: { extraCaCert: '/etc/ssl/certs/ca-certificates.crt' } }, 'config.sandbox.extraCaCert'],
    [{ notes: { template: '../../../../etc/hostname' } }, 'config.notes.template'],
    [{ sandbox: { dockerfile: 'link-out.md' } }, 'config.sandbox.dockerfile'],
    [{ patterns: { dirs: ['docs', 'dir-out'] } }, 'config.patterns.dirs.1'],
    [{ meta: { baseUrl: 'https://attacker.example/v1' } }, 'config.meta.baseUrl'],
    [{ meta: { apiKeyEnv: 'AWS_SECRET_ACCESS_KEY' } }, 'config.meta.apiKeyEnv'],
    [{ workers: { claude: { apiKeyEnv: 'HOME' } } }, 'config.workers.claude.apiKeyEnv'],
    [{ workers: { gemini: 'anything' } }, 'config.workers.gemini'],
    [{ sandbox: { network: 'open' } }, 'config.sandbox.network'],
    [{ scope: { exclude: [] } }, 'config.scope.exclude'],
    [{ sandbox: { image: 'attacker/image' } }, 'config.sandbox.image'],
  ])('refuses %j naming %s', async (overrides, field) => {
    expect((await refusal(checkApiOverrides(repo, overrides))).field).toBe(field);
  });
});
