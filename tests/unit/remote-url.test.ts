import { describe, expect, it } from 'vitest';
import {
  basicAuthConfig,
  forgeToken,
  forgeTokens,
  remoteCredential,
} from '../../src/remote/remote-credentials.js';
import { displayUrl, forgeOf, parseRemoteUrl, urlCredentials } from '../../src/remote/remote-url.js';

describe('remote URLs', () => {
  it('reads https, ssh, scp-like and file remotes, and refuses what git would not', () => {
    expect(parseRemoteUrl('https://github.com/acme/app.git')).toMatchObject({
      scheme: 'https',
      host: 'github.com',
      path: 'acme/app',
    });
    expect(parseRemoteUrl('git@gitlab.com:group/sub/app.git')).toMatchObject({
      scheme: 'scp',
      host: 'gitlab.com',
      path: 'group/sub/app',
    });
    expect(parseRemoteUrl('ssh://git@host:2222/x/y')).toMatchObject({
      scheme: 'ssh',
      host: 'host',
      path: 'x/y',
    });
    expect(parseRemoteUrl('file:///srv/git/app.git')).toMatchObject({ scheme: 'file', path: 'srv/git/app' });
    expect(parseRemoteUrl('ftp://host/x')).toBeNull();
    expect(parseRemoteUrl('not a url')).toBeNull();
    expect(parseRemoteUrl('')).toBeNull();
  });

  it('never shows the credentials of a URL', () => {
    const raw = 'https://bot:ghp_secretSecretSecretSecretSecret1234@github.com/acme/app.git';
    expect(displayUrl(raw)).toBe('https://github.com/acme/app.git');
    expect(urlCredentials(raw)).toEqual({ user: 'bot', password: 'ghp_secretSecretSecretSecretSecret1234' });
    expect(urlCredentials('https://github.com/acme/app.git')).toBeNull();
  });

  it('reads the forge from the host unless the person names it', () => {
    const own = parseRemoteUrl('https://git.example.com/acme/app.git');
    expect(own && forgeOf(own)).toBeNull();
    expect(own && forgeOf(own, 'gitlab')).toBe('gitlab');
    const gitlab = parseRemoteUrl('https://gitlab.example.com/acme/app.git');
    expect(gitlab && forgeOf(gitlab)).toBe('gitlab');
  });
});

describe('remote credentials', () => {
  const github = parseRemoteUrl('https://github.com/acme/app.git');
  if (github === null) throw new Error('unreachable');

  it('takes GH_TOKEN before GITHUB_TOKEN and scopes the header to the remote', () => {
    const credential = remoteCredential(github, { GH_TOKEN: 'first-token', GITHUB_TOKEN: 'second-token' });
    expect(credential?.variable).toBe('GH_TOKEN');
    const [key, value] = Object.entries(credential?.gitConfig ?? {})[0] ?? [];
    expect(key).toBe('http.https://github.com/acme/app.git.extraHeader');
    expect(value).toBe(
      `Authorization: Basic ${Buffer.from('x-access-token:first-token').toString('base64')}`,
    );
  });

  it('leaves ssh remotes and unknown hosts to git, and lists every token for redaction', () => {
    const ssh = parseRemoteUrl('git@github.com:acme/app.git');
    expect(ssh && remoteCredential(ssh, { GH_TOKEN: 'first-token' })).toBeNull();
    const own = parseRemoteUrl('http://127.0.0.1:9/app.git');
    expect(own && remoteCredential(own, { GITLAB_TOKEN: 'gl-token-1' })).toBeNull();
    expect(own && remoteCredential(own, { GITLAB_TOKEN: 'gl-token-1' }, 'gitlab')?.variable).toBe(
      'GITLAB_TOKEN',
    );
    expect(forgeTokens({ GH_TOKEN: 'a-token', GITLAB_TOKEN: 'b-token', OTHER: 'x' })).toEqual([
      'a-token',
      'b-token',
    ]);
  });

  it('forgeToken: the first variable set (blank ones skipped, trimmed); basicAuthConfig: one header for one URL', () => {
    expect(forgeToken('github', { GH_TOKEN: '  ', GITHUB_TOKEN: ' gh-2 ' })).toEqual({
      token: 'gh-2',
      variable: 'GITHUB_TOKEN',
    });
    expect(forgeToken('gitlab', { GH_TOKEN: 'gh-1' })).toBeNull();
    const { gitConfig, encoded } = basicAuthConfig('https://git.example.com/a/b.git/', 'bot', 'pw');
    expect(encoded).toBe(Buffer.from('bot:pw').toString('base64'));
    expect(gitConfig).toEqual({
      'http.https://git.example.com/a/b.git.extraHeader': `Authorization: Basic ${encoded}`,
    });
  });
});
