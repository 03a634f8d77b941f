/**
 * A git remote's URL as agent-runner shows, stores and reasons about it. A URL may carry credentials
 * (`https://user:token@host/...`): they never leave this module except to git itself, so what is shown,
 * journaled or written in a note is {@link displayUrl}. The forge (GitHub or GitLab) is read from the host,
 * and a person whose forge runs on its own host names it (`--forge`, `AGENT_RUNNER_FORGE`, `deliver.forge`).
 */
import type { ForgeKind } from '../core/events.js';
import { UserError } from '../errors.js';

export type { ForgeKind };

/** A remote URL taken apart: how git reaches it and where it points. */
export interface RemoteUrl {
  /** As given, credentials included: only for git. */
  raw: string;
  /** http, https, ssh, file, or `scp` for the `user@host:path` form. */
  scheme: 'http' | 'https' | 'ssh' | 'file' | 'scp';
  /** Lowercased host name (no port); empty for file URLs. */
  host: string;
  /** The repository's path on its host, without leading slash and without `.git` (`owner/name`). */
  path: string;
}

const SCP_FORM = /^(?:[^@/:]+@)?([^/:]+):(?!\/\/)(.+)$/;

/** Parses a git remote URL, or returns null when git would not read it as a remote. */
export function parseRemoteUrl(raw: string): RemoteUrl | null {
  const text = raw.trim();
  if (text === '' || /[\s\0]/.test(text)) return null;
  const scp = SCP_FORM.exec(text);
  if (scp !== null && !text.includes('://')) {
    return {
      raw: text,
      scheme: 'scp',
      host: (scp[1] as string).toLowerCase(),
      path: trimPath(scp[2] as string),
    };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (scheme !== 'http' && scheme !== 'https' && scheme !== 'ssh' && scheme !== 'file') return null;
  return {
    raw: text,
    scheme,
    host: url.hostname.toLowerCase(),
    path: trimPath(decodeURIComponent(url.pathname)),
  };
}

function trimPath(path: string): string {
  return path
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

/** The URL with any user name and password removed: what may be shown, stored and journaled. */
export function displayUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.username === '' && url.password === '') return raw;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return raw;
  }
}

/** The credentials written into a URL (`https://user:token@host`), or null when it has none. */
export function urlCredentials(raw: string): { user: string; password: string } | null {
  try {
    const url = new URL(raw);
    if (url.password === '') return null;
    return { user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) };
  } catch {
    return null;
  }
}

/** The forge a remote lives on: `override` when the person named one, else read from the host, else null. */
export function forgeOf(remote: RemoteUrl, override?: ForgeKind | null): ForgeKind | null {
  if (override) return override;
  if (remote.host === 'github.com' || remote.host.endsWith('.github.com')) return 'github';
  if (remote.host === 'gitlab.com' || remote.host.startsWith('gitlab.')) return 'gitlab';
  return null;
}

/** The forge kinds a person can name (`--forge`, `AGENT_RUNNER_FORGE`, `deliver.forge`); `auto` reads the host. */
export const FORGE_CHOICES = ['auto', 'github', 'gitlab'] as const;

/**
 * A forge named before any config file is read (`run --repo` clones first): `--forge` wins over
 * `AGENT_RUNNER_FORGE`; null for `auto` or neither. A value that is no forge is refused with the choices.
 */
export function namedForge(flag: string | undefined, env: NodeJS.ProcessEnv): ForgeKind | null {
  const [value, source] = flag ? [flag, '--forge'] : [env.AGENT_RUNNER_FORGE?.trim(), 'AGENT_RUNNER_FORGE'];
  if (!value || value === 'auto') return null;
  if (value === 'github' || value === 'gitlab') return value;
  throw new UserError(
    'usage',
    `${source} ${JSON.stringify(value)} is no forge: give github (GitHub or GitHub Enterprise), gitlab (gitlab.com or a self-hosted GitLab) or auto.`,
  );
}
