/**
 * Who the page acts as: the token's name and role from `GET /api/whoami`, asked once at start. A viewer's page
 * shows no control it may not use (start form, answer form, stop, resume): the server refuses those calls
 * anyway (403), and a form that can only fail is a trap. Until the answer comes, or when it cannot be had,
 * the controls show and the server decides.
 */
import type { Actor } from '../../src/identity/roles.js';

let actor: Actor | null = null;

export async function loadActor(fetchActor: () => Promise<Actor>): Promise<void> {
  try {
    actor = await fetchActor();
  } catch {
    actor = null;
  }
}

/** Whether the page shows controls that change something (the role `operator` or `admin`, or not known). */
export function canOperate(): boolean {
  return actor?.role !== 'viewer';
}

/** What the page shows where a viewer's controls would be. */
export function readOnlyNotice(document: Document): HTMLElement {
  const notice = document.createElement('p');
  notice.className = 'read-only';
  notice.id = 'read-only';
  notice.textContent = `Read only: ${actor?.name ?? 'this token'} is a viewer (starting, answering, stopping and resuming need an operator's token).`;
  return notice;
}
