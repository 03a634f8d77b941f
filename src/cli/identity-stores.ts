/**
 * Where `token` and `audit` find the tokens and the audit log: a server's API (`--server URL`, an admin token
 * in AGENT_RUNNER_TOKEN), the control database (`--control URL`, control.url or AGENT_RUNNER_CONTROL_URL:
 * the fleet's), else the repository's state directory (`.agent-runner/`: one server's). The last two are
 * reached directly: whoever may read them holds every token's hash and the log already, so they need no token;
 * an action there is audited as the local user (`cli:<user>`, from `cli`).
 */
import { userInfo } from 'node:os';
import path from 'node:path';
import type { AuditLog, AuditRecord } from '../identity/audit-entry.js';
import type { Role } from '../identity/roles.js';
import type { TokenRecord, TokenStore } from '../identity/token-store.js';
import type { ServeClient } from '../serve/api-client.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import { clientHere } from './client-commands.js';
import { resolveControlUrl } from './control-command.js';
import type { CommandContext } from './program.js';

export interface IdentityOptions {
  server?: string;
  control?: string;
}

/** The tokens and the audit log, as one command sees them; `close` ends a database connection. */
export interface IdentityStores {
  readonly where: string;
  create(name: string, role: Role): Promise<{ token: string; record: TokenRecord }>;
  list(): Promise<TokenRecord[]>;
  revoke(name: string): Promise<TokenRecord | null>;
  audit(since?: Date): Promise<AuditRecord[]>;
  close(): Promise<void>;
}

/** Who a command run on the store directly is, in the audit log. */
function localActor(): { name: string; role: 'admin' } {
  let user = 'unknown';
  try {
    user =
      userInfo()
        .username.toLowerCase()
        .replace(/[^a-z0-9._-]/g, '') || 'unknown';
  } catch {
    // No user entry for this uid (a container): the log still says it came from the CLI.
  }
  return { name: `cli:${user}`, role: 'admin' };
}

/** A store reached directly: its actions go to its audit log as the local user's. */
function direct(
  where: string,
  tokens: TokenStore,
  log: AuditLog,
  close: () => Promise<void>,
): IdentityStores {
  const audited = async (action: 'token.create' | 'token.revoke', tokenName: string) =>
    log.append({
      at: new Date().toISOString(),
      actor: localActor(),
      action,
      tokenName,
      from: 'cli',
      status: 200,
    });
  return {
    where,
    create: async (name, role) => {
      const created = await tokens.create(name, role);
      await audited('token.create', name);
      return created;
    },
    list: () => tokens.list(),
    revoke: async (name) => {
      const revoked = await tokens.revoke(name);
      if (revoked !== null) await audited('token.revoke', name);
      return revoked;
    },
    audit: (since) => log.list(since ? { since } : {}),
    close,
  };
}

/** Through a server's API: the server checks the admin token and audits each call itself. */
function remote(client: ServeClient): IdentityStores {
  return {
    where: client.url,
    create: async (name, role) => {
      const { token, ...record } = await client.request<TokenRecord & { token: string }>(
        'POST',
        '/api/tokens',
        { name, role },
      );
      return { token, record };
    },
    list: async () => (await client.request<{ tokens: TokenRecord[] }>('GET', '/api/tokens')).tokens,
    revoke: async (name) => {
      try {
        return await client.request<TokenRecord>('POST', `/api/tokens/${encodeURIComponent(name)}/revoke`);
      } catch (error) {
        if ((error as { status?: number }).status === 404) return null;
        throw error;
      }
    },
    audit: async (since) =>
      (
        await client.request<{ entries: AuditRecord[] }>(
          'GET',
          `/api/audit${since ? `?since=${encodeURIComponent(since.toISOString())}` : ''}`,
        )
      ).entries,
    close: async () => undefined,
  };
}

export async function identityStores(
  options: IdentityOptions,
  context: CommandContext,
): Promise<IdentityStores> {
  if (options.server !== undefined) return remote(await clientHere(context, { server: options.server }));
  const url = await resolveControlUrl(options.control, context);
  if (url !== null) {
    const [{ openControlDatabase }, { ControlTokenStore, ControlAuditLog }] = await Promise.all([
      import('../control/control-database.js'),
      import('../control/control-tokens.js'),
    ]);
    const database = await openControlDatabase(url, { max: 1 });
    const tokens = new ControlTokenStore(database);
    return direct(tokens.where, tokens, new ControlAuditLog(database), () => database.close());
  }
  const [{ FileTokenStore }, { FileAuditLog }] = await Promise.all([
    import('../identity/file-token-store.js'),
    import('../identity/file-audit-log.js'),
  ]);
  const stateDir = path.join((await inspectRepository(context.cwd)).root, '.agent-runner');
  const tokens = new FileTokenStore(stateDir);
  return direct(stateDir, tokens, new FileAuditLog(stateDir), async () => undefined);
}
