/**
 * Where the control plane's PostgreSQL is: `--control URL`, else `control.url` of agent-runner.yaml, else
 * AGENT_RUNNER_CONTROL_URL (the config loader merges the file, the environment and the flag, the flag winning).
 * The URL's password is a secret: it is added to the process's redaction point as soon as the URL is known,
 * and the URL is shown only through {@link shownControlUrl}.
 */
import { UserError } from '../errors.js';
import type { Redaction } from '../notes/redact.js';

/** A control-plane URL, checked; `shown` is the same URL with its password replaced by `***`. */
export interface ControlUrl {
  url: string;
  shown: string;
}

/** The URL without its password (and without query parameters, which may carry one too). */
export function shownControlUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    parsed.search = '';
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * Checks `url` is a postgres:// URL and hides its password (and the password in its query, if any) from
 * everything the process writes from now on.
 */
export function controlUrl(url: string, redaction: Redaction, origin = '--control'): ControlUrl {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserError('usage', `${origin}: not a URL; give postgres://USER:PASSWORD@HOST:PORT/DATABASE.`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')
    throw new UserError('usage', `${origin}: expected a postgres:// URL, got ${parsed.protocol}//…`);
  const secrets = [parsed.password, parsed.searchParams.get('password') ?? undefined]
    .filter((value): value is string => Boolean(value))
    .flatMap((value) => [value, decodeURIComponent(value)]);
  redaction.add(secrets);
  return { url, shown: shownControlUrl(url) };
}
