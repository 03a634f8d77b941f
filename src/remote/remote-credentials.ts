/**
 * The credential host git uses to fetch from and push to a remote, from the environment the person or the CI
 * job gives agent-runner: `GH_TOKEN` or `GITHUB_TOKEN` for GitHub, `GITLAB_TOKEN` for GitLab. With none, git's
 * own credential helper and SSH set-up answer, as for any git command the person runs.
 *
 * The token reaches git as an `http.<url>.extraHeader` setting in the environment (GIT_CONFIG_KEY_n), never
 * in a command line (other users of the machine can read those), never in a URL git would store, and never in a
 * file; the header is scoped to the remote's own URL so no other host sees it. It never enters a sandbox: only
 * host git calls get it. Every token found is returned so the caller can add it to the task's redaction.
 */
import { forgeOf, type ForgeKind, type RemoteUrl } from './remote-url.js';

/** The environment variables read for each forge, first found wins. */
export const TOKEN_VARIABLES: Readonly<Record<ForgeKind, readonly string[]>> = {
  github: ['GH_TOKEN', 'GITHUB_TOKEN'],
  gitlab: ['GITLAB_TOKEN'],
};

/** The user name each forge expects beside a token in basic auth over HTTPS. */
const TOKEN_USER: Readonly<Record<ForgeKind, string>> = { github: 'x-access-token', gitlab: 'oauth2' };

/** A token for one remote, and where it came from (the variable's name, for messages). */
export interface RemoteCredential {
  forge: ForgeKind;
  token: string;
  variable: string;
  /** Git settings (command-line scope, passed through the environment) that send it to this remote only. */
  gitConfig: Record<string, string>;
}

/** The first of `forge`'s token variables set in `env` (trimmed), and its name; null when none is set. */
export function forgeToken(
  forge: ForgeKind,
  env: NodeJS.ProcessEnv,
): { token: string; variable: string } | null {
  for (const variable of TOKEN_VARIABLES[forge]) {
    const token = env[variable]?.trim();
    if (token) return { token, variable };
  }
  return null;
}

/**
 * The git setting that sends `user:password` as basic auth to `url` only (the header is scoped to that URL, so
 * no other host sees it), for the environment, never argv: other users can read a command line. `encoded` is
 * the header's base64, as secret as the password (the caller redacts it).
 */
export function basicAuthConfig(
  url: string,
  user: string,
  password: string,
): { gitConfig: Record<string, string>; encoded: string } {
  const encoded = Buffer.from(`${user}:${password}`).toString('base64');
  return {
    gitConfig: { [`http.${url.replace(/\/+$/, '')}.extraHeader`]: `Authorization: Basic ${encoded}` },
    encoded,
  };
}

/** The token for `remote` from `env`, or null when git should use its own credential set-up. */
export function remoteCredential(
  remote: RemoteUrl,
  env: NodeJS.ProcessEnv,
  forgeOverride?: ForgeKind | null,
): RemoteCredential | null {
  if (remote.scheme !== 'http' && remote.scheme !== 'https') return null;
  const forge = forgeOf(remote, forgeOverride);
  if (forge === null) return null;
  const found = forgeToken(forge, env);
  if (found === null) return null;
  return {
    forge,
    ...found,
    gitConfig: basicAuthConfig(remote.raw, TOKEN_USER[forge], found.token).gitConfig,
  };
}

/** Every forge token set in `env`: the values a task's redaction must hide wherever they turn up. */
export function forgeTokens(env: NodeJS.ProcessEnv): string[] {
  return Object.values(TOKEN_VARIABLES)
    .flat()
    .map((variable) => env[variable]?.trim())
    .filter((token): token is string => Boolean(token));
}
