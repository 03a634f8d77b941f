/**
 * Which hosts the egress proxy lets through. An entry is a host name (`registry.npmjs.org`, matched exactly),
 * `*.example.com` (any subdomain of example.com, not example.com itself) or an IP literal. Case and a trailing
 * dot do not matter. Ports are not restricted: a listed host is reachable on any port.
 */
import { UserError } from '../errors.js';

/** A host name as compared: lower case, no trailing dot, IPv6 brackets removed. */
export function canonicalHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

/** Validates and canonicalises allowlist entries; a URL or a path is a user error with the fix. */
export function normalizeAllowlist(entries: readonly string[]): string[] {
  return [
    ...new Set(
      entries.map((entry, index) => {
        const host = canonicalHost(entry);
        if (host === '' || /[/:@\s]/.test(host.replace(/^[0-9a-f:]+$/, 'ip')) || host === '*') {
          throw new UserError(
            'config_invalid',
            `sandbox.allowlist[${index}]: "${entry}" is not a host name. Write a domain such as ` +
              '`registry.npmjs.org` or `*.example.com` (no scheme, path or port).',
          );
        }
        return host;
      }),
    ),
  ];
}

/** Whether `host` is allowed by the (normalised) `allowlist`. */
export function isHostAllowed(host: string, allowlist: readonly string[]): boolean {
  const candidate = canonicalHost(host);
  return allowlist.some((entry) =>
    entry.startsWith('*.') ? candidate.endsWith(entry.slice(1)) : candidate === entry,
  );
}
