/**
 * The memory bank's page (`#/memory`): the entries of the server's repository and the pending proposals of
 * finished tasks, from `GET /api/memory`. An operator sees Accept and Reject on each proposal; a viewer sees
 * none (the server refuses them anyway). A proposal is model text: it is set as text only, never as HTML.
 */
import type { MemoryBankEntry } from '../../src/memory/memory-entry.js';
import type { ListedProposal } from '../../src/memory/memory-proposals.js';
import { canOperate, readOnlyNotice } from './role.js';

/** What `GET /api/memory` answers. */
interface MemoryAnswer {
  dir: string;
  entries: MemoryBankEntry[];
  proposals: ListedProposal[];
  problems: string[];
}

type Api = <T>(method: string, route: string, body?: unknown) => Promise<T>;
type Element = (
  tag: string,
  attributes?: Record<string, string>,
  ...children: (Node | string)[]
) => HTMLElement;

function entryRow(entry: MemoryBankEntry, el: Element): HTMLElement {
  return el(
    'tr',
    { 'data-entry': entry.id },
    el('td', {}, entry.id),
    el('td', {}, entry.status),
    el('td', {}, entry.title),
    el('td', {}, entry.source),
  );
}

function proposalItem(proposal: ListedProposal, api: Api, el: Element, done: () => void): HTMLElement {
  const status = el('span', { class: 'error' });
  const item = el(
    'li',
    { 'data-proposal': proposal.id },
    el('strong', {}, proposal.id),
    ' ',
    el('span', { class: 'proposal-title' }, proposal.title),
    el('pre', { class: 'proposal-text' }, proposal.text),
  );
  if (!canOperate()) return item;
  for (const [verb, label] of [
    ['accept', 'Accept'],
    ['reject', 'Reject'],
  ] as const) {
    const button = el('button', { type: 'button', 'data-action': verb }, label);
    button.addEventListener('click', () => {
      api('POST', `/api/memory/proposals/${encodeURIComponent(proposal.id)}/${verb}`).then(
        done,
        (error: Error) => {
          status.textContent = error.message;
        },
      );
    });
    item.append(button, ' ');
  }
  item.append(status);
  return item;
}

/** Shows the memory bank's page in `main`. */
export function showMemory(main: HTMLElement, api: Api, el: Element): void {
  const entries = el('tbody');
  const proposals = el('ul', { id: 'memory-proposals' });
  const problems = el('p', { id: 'memory-problems', class: 'error' });
  const note = el('p', { id: 'memory-dir' });
  const refresh = () =>
    api<MemoryAnswer>('GET', '/api/memory').then(
      (answer) => {
        note.textContent = `Entries in ${answer.dir} of the working tree; an accepted proposal is written there for a person to review and commit (workers read committed entries only).`;
        entries.replaceChildren(...answer.entries.map((entry) => entryRow(entry, el)));
        proposals.replaceChildren(
          ...answer.proposals.map((proposal) => proposalItem(proposal, api, el, () => void refresh())),
        );
        if (answer.proposals.length === 0) proposals.append(el('li', {}, 'No pending proposals.'));
        problems.textContent = answer.problems.join('; ');
      },
      (error: Error) => {
        problems.textContent = error.message;
      },
    );
  main.replaceChildren(
    el('h1', {}, 'Memory bank'),
    note,
    el(
      'table',
      { id: 'memory-entries' },
      el('thead', {}, el('tr', {}, ...['Id', 'Status', 'Title', 'Source'].map((head) => el('th', {}, head)))),
      entries,
    ),
    el('h2', {}, 'Proposed by finished tasks'),
    canOperate() ? '' : readOnlyNotice(document),
    proposals,
    problems,
  );
  void refresh();
}
