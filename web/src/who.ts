/**
 * Who acted on a task, as the server's audit tells (the task's journal `audit` events): started, answered,
 * stopped, resumed, by which token's name and role, from where, when. Set as text only: a token's name is
 * plain by construction, and nothing here is ever HTML.
 */
import type { AuditRecord } from '../../src/identity/audit-entry.js';

const VERBS: Partial<Record<AuditRecord['action'], string>> = {
  'task.start': 'Started',
  'task.queue': 'Queued',
  'task.answer': 'Answered',
  'task.stop': 'Stopped',
  'task.resume': 'Resumed',
  'memory.accept': 'A memory proposal accepted',
  'memory.reject': 'A memory proposal rejected',
  'webhook.task': 'Queued from the forge',
};

/** One line per action on the task: `Started by alice (operator) from 127.0.0.1 at 12:03:04`. */
export function auditList(records: readonly AuditRecord[]): HTMLElement {
  const list = document.createElement('ul');
  list.id = 'audit';
  for (const record of records) {
    const item = document.createElement('li');
    item.dataset.action = record.action;
    item.dataset.actor = record.actor.name;
    item.textContent =
      `${VERBS[record.action] ?? record.action} by ${record.actor.name} (${record.actor.role}) ` +
      `from ${record.from} at ${record.at.slice(11, 19)}`;
    // A webhook's task: the issue or comment it came from, a link the server built from numbers.
    if (record.origin !== undefined && /^https?:\/\//.test(record.origin)) {
      const link = document.createElement('a');
      link.href = record.origin;
      link.rel = 'noopener noreferrer';
      link.className = 'origin';
      link.textContent = record.origin;
      item.append(' (', link, ')');
    }
    list.append(item);
  }
  return list;
}
