import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTempRepo } from '../support/git-repo.js';
import { GitHttpRemote } from '../support/git-http-remote.js';

// The test remote itself: git's http-backend really serves fetch and push, asks for basic auth, and refuses a
// protected branch, so the delivery tests that lean on it can fail.
describe('the git remote over HTTP used by the delivery tests', () => {
  const remote = new GitHttpRemote();
  const scratch = mkdtempSync(join(tmpdir(), 'ar-remote-client-'));
  beforeAll(async () => {
    await remote.start();
  });
  afterAll(async () => {
    await remote.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  function withCredentials(): NodeJS.ProcessEnv {
    const basic = Buffer.from(`${remote.user}:${remote.password}`).toString('base64');
    return {
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.extraHeader',
      GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}`,
      GIT_TERMINAL_PROMPT: '0',
    };
  }

  it('clones and pushes with the credentials, refuses without them, and rejects a protected branch', async () => {
    const source = await createTempRepo();
    await source.commit('first', { 'a.txt': 'a\n' });
    await remote.createFrom('app', source.root);

    const anonymous = await execa('git', ['clone', remote.url('app'), join(scratch, 'anon')], {
      reject: false,
      env: { GIT_TERMINAL_PROMPT: '0' },
    });
    expect(anonymous.exitCode).not.toBe(0);
    expect(remote.requests.some((request) => !request.authorized)).toBe(true);

    const clone = join(scratch, 'clone');
    await execa('git', ['clone', '--quiet', remote.url('app'), clone], { env: withCredentials() });
    await execa('git', [
      '-C',
      clone,
      '-c',
      'user.name=T',
      '-c',
      'user.email=t@e.test',
      'commit',
      '--allow-empty',
      '-m',
      'two',
    ]);
    await execa('git', ['-C', clone, 'push', '--quiet', 'origin', 'HEAD:refs/heads/feature'], {
      env: withCredentials(),
    });
    const local = (await execa('git', ['-C', clone, 'rev-parse', 'HEAD'])).stdout;
    expect(await remote.ref('app', 'refs/heads/feature')).toBe(local);

    remote.protect('app', 'main');
    const refused = await execa('git', ['-C', clone, 'push', 'origin', 'HEAD:refs/heads/main'], {
      reject: false,
      env: withCredentials(),
    });
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('protected branch: main');
    expect(await remote.ref('app', 'refs/heads/main')).not.toBe(local);
  });
});
