/**
 * `agent-runner token create|list|revoke` and `agent-runner audit`: named tokens with roles for a server a
 * team shares, and the log of who changed what. See docs/team-server.md.
 */
import type { Command } from 'commander';
import { UserError } from '../errors.js';
import { parseSince } from '../identity/audit-since.js';
import type { AuditRecord } from '../identity/audit-entry.js';
import { ROLES, roleSchema, tokenNameSchema } from '../identity/roles.js';
import { SERVER_TOKEN_VARIABLE } from './client-commands.js';
import { identityStores, type IdentityOptions } from './identity-stores.js';
import type { CommandContext } from './program.js';

interface JsonOption {
  json?: boolean;
}

async function withStores<T>(
  options: IdentityOptions,
  context: CommandContext,
  act: (stores: Awaited<ReturnType<typeof identityStores>>) => Promise<T>,
): Promise<T> {
  const stores = await identityStores(options, context);
  try {
    return await act(stores);
  } finally {
    await stores.close();
  }
}

async function createCommand(
  options: IdentityOptions & JsonOption & { name?: string; role?: string },
  context: CommandContext,
): Promise<void> {
  const name = tokenNameSchema.safeParse(options.name ?? '');
  if (!name.success)
    throw new UserError(
      'usage',
      `--name ${options.name ?? ''}: ${name.error.issues[0]?.message ?? 'invalid'}.`,
    );
  const role = roleSchema.safeParse(options.role ?? '');
  if (!role.success)
    throw new UserError('usage', `--role ${options.role ?? ''}: give one of ${ROLES.join(', ')}.`);
  await withStores(options, context, async (stores) => {
    const { token, record } = await stores.create(name.data, role.data);
    if (options.json) context.output.out(JSON.stringify({ token, ...record }));
    else context.output.out(token);
    context.output.err(
      `agent-runner: token ${record.name} (${record.role}) created in ${stores.where}. It is shown this once: ` +
        `give it to its holder, who sends it as Authorization: Bearer <token> (or ${SERVER_TOKEN_VARIABLE} with --server).`,
    );
  });
}

async function listCommand(options: IdentityOptions & JsonOption, context: CommandContext): Promise<void> {
  await withStores(options, context, async (stores) => {
    const tokens = await stores.list();
    if (options.json) {
      context.output.out(JSON.stringify({ tokens }));
      return;
    }
    if (tokens.length === 0) {
      context.output.err(`agent-runner: no named tokens in ${stores.where}`);
      return;
    }
    const rows = [
      ['NAME', 'ROLE', 'CREATED', 'LAST USED', 'REVOKED'],
      ...tokens.map((token) => [
        token.name,
        token.role,
        token.createdAt,
        token.lastUsedAt ?? '-',
        token.revokedAt ?? '-',
      ]),
    ];
    const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
    for (const row of rows)
      context.output.out(
        row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join('  ')
          .trimEnd(),
      );
  });
}

async function revokeCommand(name: string, options: IdentityOptions, context: CommandContext): Promise<void> {
  await withStores(options, context, async (stores) => {
    const revoked = await stores.revoke(name);
    if (revoked === null)
      throw new UserError(
        'usage',
        `No token named ${name} that is not revoked in ${stores.where}: \`agent-runner token list\` shows them.`,
      );
    context.output.err(`agent-runner: token ${name} revoked in ${stores.where}: it is refused from now on`);
  });
}

/** One audit entry as a line: when, who (role), what, which task or token, from where, the answer's status. */
export function formatAuditRecord(record: AuditRecord): string {
  const what = record.taskId ?? record.tokenName ?? '-';
  return [
    record.at,
    `${record.actor.name} (${record.actor.role})`,
    record.action,
    what,
    `from ${record.from}`,
    String(record.status),
    ...(record.node ? [`node ${record.node}`] : []),
  ].join('  ');
}

async function auditCommand(
  options: IdentityOptions & JsonOption & { since?: string },
  context: CommandContext,
): Promise<void> {
  const since = options.since === undefined ? undefined : parseSince(options.since);
  if (since === null)
    throw new UserError(
      'usage',
      `--since ${options.since ?? ''}: give a duration (90m, 12h, 7d) or a time (2026-11-28T09:00:00Z).`,
    );
  await withStores(options, context, async (stores) => {
    const records = await stores.audit(since);
    for (const record of records)
      context.output.out(options.json ? JSON.stringify(record) : formatAuditRecord(record));
    if (records.length === 0 && !options.json)
      context.output.err(`agent-runner: no audit entries in ${stores.where}`);
  });
}

function storeOptions(command: Command): Command {
  return command
    .option(
      '--control <url>',
      "the fleet's control database (postgres://…; else control.url, AGENT_RUNNER_CONTROL_URL)",
    )
    .option('--server <url>', `a server's API instead (an admin token in ${SERVER_TOKEN_VARIABLE})`)
    .option('--json', 'JSON on stdout');
}

export function registerTokenCommands(program: Command, context: CommandContext): void {
  const token = program
    .command('token')
    .description(
      "Named tokens with roles for a shared server (viewer, operator, admin); kept in this repository's .agent-runner/ or the fleet's database",
    );
  storeOptions(
    token
      .command('create')
      .description('Create a named token and print it (the only time it is shown)')
      .requiredOption('--name <name>', 'who it names in the audit log and on the page')
      .requiredOption('--role <role>', ROLES.join(' | ')),
  ).action((options) => createCommand(options as Parameters<typeof createCommand>[0], context));
  storeOptions(
    token.command('list').description('Names, roles, when created, last used, revoked (never the tokens)'),
  ).action((options: IdentityOptions & JsonOption) => listCommand(options, context));
  storeOptions(
    token
      .command('revoke')
      .description('Revoke a token: every server that reads the same store refuses it from its next request')
      .argument('<name>', "the token's name"),
  ).action((name: string, options: IdentityOptions) => revokeCommand(name, options, context));
  storeOptions(
    program
      .command('audit')
      .description(
        'Who changed what: every start, answer, stop, resume and token change, with who and from where',
      )
      .option('--since <when>', 'a duration back from now (90m, 12h, 7d) or a time'),
  ).action((options: IdentityOptions & JsonOption & { since?: string }) => auditCommand(options, context));
}
