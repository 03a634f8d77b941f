/**
 * Who acted on a task, as the server's audit tells (the task's journal `audit` events): started, answered,
 * stopped, resumed, by which token's name and role, from where, when; where a webhook's task came from (the
 * issue or comment) and the task's follow-ups. Set as text only: a token's name is plain by construction, a
 * follow-up's instruction is a person's or the forge's text, and nothing here is ever HTML. A link is made of
 * an origin only when it is an https page of the configured forge's own host; anything else is shown as text.
 */
import type { AuditRecord } from '../../src/identity/audit-entry.js';
import type { TaskPage } from '../../src/serve/board-view.js';

const VERBS: Partial<Record<AuditRecord['action'], string>> = {
  'task.start': 'Started',
  'task.queue': 'Queued',
  'task.answer': 'Answered',
  'task.stop': 'Stopped',
  'task.resume': 'Resumed',
  'task.followup': 'Followed up',
  'memory.accept': 'A memory proposal accepted',
  'memory.reject': 'A memory proposal rejected',
  'webhook.task': 'Queued from the forge',
  'webhook.followup': 'A follow-up asked on the forge',
};

/** `url` as a link when it is an https page of `forgeWeb`'s host, else as text (never a link). */
export function forgeLink(url: string, forgeWeb: string | null): HTMLElement {
  const parse = (value: string | null) => {
    try {
      return value === null ? null : new URL(value);
    } catch {
      return null;
    }
  };
  const page = parse(url);
  const forge = parse(forgeWeb);
  const linked =
    page !== null &&
    forge !== null &&
    page.protocol === 'https:' &&
    forge.protocol === 'https:' &&
    page.host === forge.host &&
    page.username === '' &&
    page.password === '';
  const node = document.createElement(linked ? 'a' : 'span');
  if (node instanceof HTMLAnchorElement) {
    node.href = page?.href ?? '';
    node.rel = 'noopener noreferrer';
  }
  node.className = 'origin';
  node.textContent = url;
  return node;
}

/** One line per action on the task: `Started by alice (operator) from 127.0.0.1 at 12:03:04`. */
export function auditList(records: readonly AuditRecord[], forgeWeb: string | null): HTMLElement {
  const list = document.createElement('ul');
  list.id = 'audit';
  for (const record of records) {
    const item = document.createElement('li');
    item.dataset.action = record.action;
    item.dataset.actor = record.actor.name;
    item.textContent =
      `${VERBS[record.action] ?? record.action} by ${record.actor.name} (${record.actor.role}) ` +
      `from ${record.from} at ${record.at.slice(11, 19)}`;
    // A webhook's task or follow-up: the issue or comment it came from, a link the server built from numbers.
    if (record.origin !== undefined) item.append(' (', forgeLink(record.origin, forgeWeb), ')');
    list.append(item);
  }
  return list;
}

/** Where the task came from: the issue or comment of the webhook that queued it, with who asked. */
export function originLine(page: Pick<TaskPage, 'audit' | 'forgeWeb'>): HTMLElement | string {
  const queued = page.audit.find((record) => record.action === 'webhook.task' && record.origin);
  if (queued?.origin === undefined) return '';
  const line = document.createElement('p');
  line.id = 'origin';
  line.append(
    'From the forge: ',
    forgeLink(queued.origin, page.forgeWeb),
    ` (asked by ${queued.actor.name})`,
  );
  return line;
}

/** The task's follow-ups, oldest first: number, how it ended, when, and the instruction as text. */
export function followupList(page: Pick<TaskPage, 'followups'>): HTMLElement | string {
  if (page.followups.length === 0) return '';
  const list = document.createElement('ol');
  list.id = 'followups';
  for (const followup of page.followups) {
    const item = document.createElement('li');
    item.dataset.followup = String(followup.number);
    const title = document.createElement('strong');
    title.textContent = `Follow-up ${followup.number}`;
    const instruction = document.createElement('pre');
    instruction.className = 'instruction';
    instruction.textContent = followup.instruction;
    item.append(
      title,
      ` ${followup.state ?? 'running'}, started at ${followup.at.slice(11, 19)}`,
      instruction,
    );
    list.append(item);
  }
  const section = document.createElement('section');
  const heading = document.createElement('h3');
  heading.textContent = 'Follow-ups';
  section.append(heading, list);
  return section;
}
