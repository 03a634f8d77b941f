/**
 * The web view of `agent-runner serve`: a board of the repository's tasks (and, on a node of a fleet, every
 * task of the fleet with the node that runs it) that updates live, a task's page
 * (its state timeline, criteria and their evidence, each worker run's commands arriving with their exit
 * codes, DoD checks, its question as a form, its note), and a form that starts a task. Plain DOM, bundled at
 * `npm run build` into dist/web/app.js and served by the server itself: nothing is fetched from elsewhere.
 * Every text from a task (the worker's commands and messages included) is attacker data: it is only ever
 * set as text, never as HTML. The one exception is the note, which agent-runner writes so that its Markdown
 * renders inert (worker text in fenced blocks or escaped): it is rendered with marked, then sanitised with
 * DOMPurify (no script, no style, no form, no image, no link out of the page's own origin but http(s)).
 */
import DOMPurify from 'dompurify';
import { marked } from 'marked';
import type { FleetTaskDetail } from '../../src/control/fleet-events.js';
import type { FleetTaskRow } from '../../src/control/fleet-tasks.js';
import type { StampedEvent } from '../../src/core/events.js';
import type { BoardTask, TaskDetail, TaskPage } from '../../src/serve/board-view.js';
import { canOperate, loadActor, readOnlyNotice } from './role.js';
import { auditList, followupList, originLine } from './who.js';
import { loadPages, type BoardFilters } from './board-pages.js';
import { showMemory } from './memory-page.js';

const TOKEN_KEY = 'agent-runner-token';
const BOARD_REFRESH_MS = 1_000;

/** The token: from `?token=` once (then out of the address bar), kept for this tab. */
function token(): string {
  const url = new URL(location.href);
  const given = url.searchParams.get('token');
  if (given) {
    sessionStorage.setItem(TOKEN_KEY, given);
    url.searchParams.delete('token');
    history.replaceState(null, '', url.toString());
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

async function api<T>(method: string, route: string, body?: unknown): Promise<T> {
  const response = await fetch(route, {
    method,
    headers: {
      authorization: `Bearer ${token()}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try {
      message = (JSON.parse(text) as { error: { message: string } }).error.message;
    } catch {
      // Not the API's JSON error.
    }
    throw new Error(message);
  }
  return (response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T;
}

/** An element with text content only (never HTML) and optional attributes and children. */
function el(
  tag: string,
  attributes: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children)
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  return element;
}

const main = () => document.getElementById('main') as HTMLElement;
let leave: (() => void) | null = null;

function elapsed(ms: number | null): string {
  if (ms === null) return '-';
  const seconds = Math.round(ms / 1000);
  return seconds < 60
    ? `${seconds}s`
    : `${Math.floor(seconds / 60)}m ${String(seconds % 60).padStart(2, '0')}s`;
}

const stateBadge = (state: string | null, status: string) =>
  el(
    'span',
    { class: `state state-${(state ?? status).toLowerCase()}`, 'data-state': state ?? '' },
    state ?? status,
  );

/** A fleet task's place in its life, as a local task's `status` says it. */
function fleetStatus(task: { state: string; endedAt: string | null }): string {
  if (task.endedAt !== null) return 'finished';
  return task.state === 'QUEUED' ? 'queued' : 'running';
}

function boardRow(task: BoardTask, fleet: boolean): HTMLElement {
  return el(
    'tr',
    { 'data-task': task.taskId, 'data-node': '' },
    el('td', {}, el('a', { href: `#/task/${encodeURIComponent(task.taskId)}` }, task.taskId)),
    el('td', {}, task.title ?? ''),
    el('td', {}, stateBadge(task.state, task.status)),
    el('td', {}, task.status.replace('_', ' ')),
    el('td', {}, elapsed(task.elapsedMs)),
    el('td', {}, String(task.runs)),
    el('td', {}, `$${task.costUsd.toFixed(4)}`),
    el('td', {}, task.question ? 'question waiting' : ''),
    ...(fleet ? [el('td', { class: 'node' }, 'this server')] : []),
  );
}

/** A task of the fleet that is not this server's own: its row in the control database, with its node. */
function fleetRow(task: FleetTaskRow): HTMLElement {
  const status = fleetStatus(task);
  const started = task.startedAt === null ? null : Date.parse(task.startedAt);
  const until = task.endedAt === null ? Date.now() : Date.parse(task.endedAt);
  return el(
    'tr',
    { 'data-task': task.taskId, 'data-node': task.node?.id ?? '', class: 'fleet-task' },
    el('td', {}, el('a', { href: `#/task/${encodeURIComponent(task.taskId)}` }, task.taskId)),
    el('td', {}, task.repoUrl),
    el('td', {}, stateBadge(task.state, status)),
    el('td', {}, status),
    el('td', {}, elapsed(started === null ? null : until - started)),
    el('td', {}, '-'),
    el('td', {}, '-'),
    el('td', {}, task.question ? 'question waiting' : ''),
    el('td', { class: 'node' }, task.node?.id ?? 'not taken yet'),
  );
}

function startForm(): HTMLElement {
  const prd = el('textarea', {
    name: 'prd',
    rows: '6',
    placeholder: '# Title\n\nWhat to build, with examples.',
  });
  const base = el('input', { name: 'base', placeholder: 'base branch (default: HEAD)' });
  // Shown on a node of a fleet: a remote repository's URL queues the task on the fleet.
  const repo = el('input', {
    name: 'repo',
    id: 'start-repo',
    hidden: '',
    placeholder: 'remote repository URL (queued on the fleet; empty: this repository)',
  });
  const error = el('p', { class: 'error' });
  const form = el(
    'form',
    { id: 'start-form' },
    el('h2', {}, 'Start a task'),
    prd,
    repo,
    base,
    el('button', { type: 'submit' }, 'Start'),
    error,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const text = (prd as HTMLTextAreaElement).value;
    const baseRef = (base as HTMLInputElement).value.trim();
    const repoUrl = (repo as HTMLInputElement).value.trim();
    api<{ taskId: string }>('POST', '/api/tasks', {
      prd: text,
      ...(baseRef ? { base: baseRef } : {}),
      ...(repoUrl ? { repo: repoUrl } : {}),
    }).then(
      ({ taskId }) => {
        location.hash = `#/task/${encodeURIComponent(taskId)}`;
      },
      (caught: Error) => {
        error.textContent = caught.message;
      },
    );
  });
  return form;
}

const COLUMNS = ['Task', 'Title', 'State', 'Status', 'Elapsed', 'Runs', 'Cost', ''];

const STATES = ['QUEUED', 'PLANNING', 'RUNNING', 'VALIDATING', 'COMPLETE', 'FAILED', 'NEEDS_REVIEW'];

/** The board's filters (state, and on a node of a fleet the node), and "More" under the table. */
function boardControls(onChange: (filters: BoardFilters) => void) {
  const state = el(
    'select',
    { id: 'filter-state', name: 'state' },
    el('option', { value: '' }, 'every state'),
    ...STATES.map((name) => el('option', { value: name }, name)),
  ) as HTMLSelectElement;
  const node = el('input', {
    id: 'filter-node',
    name: 'node',
    placeholder: 'node id',
    hidden: '',
  }) as HTMLInputElement;
  const changed = () => onChange({ state: state.value, node: node.value.trim() });
  state.addEventListener('change', changed);
  node.addEventListener('change', changed);
  const more = el('button', { type: 'button', id: 'board-more', hidden: '' }, 'More');
  return { filters: el('p', { id: 'board-filters' }, 'Show ', state, ' ', node), node, more };
}

function showBoard(): void {
  const head = el('tr', {}, ...COLUMNS.map((h) => el('th', {}, h)));
  const body = el('tbody');
  const table = el('table', { id: 'board' }, el('thead', {}, head), body);
  const fleetState = el('p', { id: 'fleet-state', class: 'error' });
  let filters: BoardFilters = { state: '', node: '' };
  let pages = 1;
  // Each refresh asks again for every page shown; an answer to an older request (other filters) is dropped.
  let asked = 0;
  const controls = boardControls((given) => {
    filters = given;
    pages = 1;
    void refresh();
  });
  controls.more.addEventListener('click', () => {
    pages += 1;
    void refresh();
  });
  main().replaceChildren(
    el('h1', {}, 'Tasks'),
    fleetState,
    controls.filters,
    table,
    controls.more,
    canOperate() ? startForm() : readOnlyNotice(document),
  );
  const refresh = () => {
    const request = (asked += 1);
    return loadPages(api, filters, pages).then(
      ({ tasks, fleet, more }) => {
        if (request !== asked) return;
        const node = fleet !== undefined;
        // A node of a fleet: its own tasks, then the fleet's others (a task listed by both is this server's).
        const own = new Set(tasks.map((task) => task.taskId));
        const others = (fleet ?? []).filter((task) => !own.has(task.taskId));
        if (node && head.childElementCount === COLUMNS.length) head.append(el('th', {}, 'Node'));
        document.getElementById('start-repo')?.toggleAttribute('hidden', !node);
        controls.node.toggleAttribute('hidden', !node);
        controls.more.toggleAttribute('hidden', !more);
        fleetState.textContent =
          fleet === null
            ? "The control database is unreachable: the fleet's other tasks are not listed now."
            : '';
        body.replaceChildren(
          ...tasks.filter((task) => task.parent === null).map((task) => boardRow(task, node)),
          ...others.map(fleetRow),
        );
      },
      () => undefined,
    );
  };
  void refresh();
  const timer = setInterval(refresh, BOARD_REFRESH_MS);
  leave = () => clearInterval(timer);
}

/** One worker run's block: its commands as they arrive. */
function runBlock(runs: Map<number, HTMLElement>, run: number, title: string): HTMLElement {
  let block = runs.get(run);
  if (!block) {
    block = el(
      'section',
      { class: 'run', 'data-run': String(run) },
      el('h3', {}, title),
      el('ol', { class: 'commands' }),
    );
    runs.set(run, block);
    document.getElementById('runs')?.append(block);
  }
  return block;
}

function onJournal(event: StampedEvent, runs: Map<number, HTMLElement>): void {
  const timeline = document.getElementById('timeline');
  if (event.type === 'transition')
    timeline?.append(
      el(
        'li',
        { 'data-state': event.to },
        `${event.at.slice(11, 19)} ${event.from} → ${event.to}`,
        event.reason ? ` (${event.reason})` : '',
      ),
    );
  if (event.type === 'worker_started')
    runBlock(
      runs,
      event.run,
      `Run ${event.run}: ${event.worker ?? 'codex'} ${event.mode}${event.model ? ` with ${event.model}` : ''}`,
    );
  if (event.type === 'worker_event') {
    const commands = runBlock(runs, event.run, `Run ${event.run}`).querySelector('.commands') as HTMLElement;
    const worker = event.event;
    if (worker.kind === 'command_started')
      commands.append(el('li', { class: 'command running' }, el('code', {}, worker.command)));
    if (worker.kind === 'command_finished') {
      const open = [...commands.querySelectorAll('li.running')].find(
        (item) => item.textContent === worker.command,
      );
      const line = open ?? commands.appendChild(el('li', {}, el('code', {}, worker.command)));
      line.className = `command ${worker.status}`;
      line.append(el('span', { class: 'exit' }, ` exit ${worker.exitCode ?? '?'}`));
    }
  }
  if (event.type === 'criteria_checks')
    runBlock(runs, event.run, `Run ${event.run}`).append(
      el(
        'ul',
        { class: 'criteria-checks' },
        ...event.results.map((check) =>
          el(
            'li',
            { class: `check ${check.status}` },
            `${check.criterionId} ${check.kind} ${check.target}: ${check.status}`,
          ),
        ),
      ),
    );
  if (event.type === 'dod')
    runBlock(runs, event.run, `Run ${event.run}`).append(
      el(
        'ul',
        { class: 'dod' },
        ...event.dod.results.map((check) =>
          el('li', { class: `check ${check.status}` }, `DoD ${check.name}: ${check.status}`),
        ),
      ),
    );
}

function criteria(detail: Pick<TaskDetail, 'plan' | 'summary'>): HTMLElement {
  const evidence = new Map((detail.summary?.criteria ?? []).map((criterion) => [criterion.id, criterion]));
  return el(
    'ul',
    { id: 'criteria' },
    ...(detail.plan?.acceptanceCriteria ?? []).map((criterion) => {
      const found = evidence.get(criterion.id);
      return el(
        'li',
        { 'data-criterion': criterion.id },
        el('strong', {}, criterion.id),
        ` ${criterion.description} `,
        el('em', {}, found ? found.status : 'not assessed'),
        found?.comment ? ` (${found.comment})` : '',
      );
    }),
  );
}

function questionForm(taskId: string, question: string): HTMLElement {
  const answer = el('input', { name: 'answer', placeholder: 'your answer' });
  const form = el(
    'form',
    { id: 'question' },
    el('p', {}, el('strong', {}, 'The task asks: '), question),
    answer,
    el('button', { type: 'submit' }, 'Answer'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void api('POST', `/api/tasks/${encodeURIComponent(taskId)}/answer`, {
      text: (answer as HTMLInputElement).value,
    }).then(() => form.remove());
  });
  return form;
}

/** Stop (a task this server runs) or resume (a stale one, or one that ended without completing). */
function actions(detail: BoardTask): HTMLElement | string {
  const path = `/api/tasks/${encodeURIComponent(detail.taskId)}`;
  const button = (label: string, action: string, then: () => void) => {
    const element = el('button', { type: 'button', id: `${action}-task` }, label);
    element.addEventListener(
      'click',
      () => void api('POST', `${path}/${action}`).then(then, (error: Error) => alert(error.message)),
    );
    return element;
  };
  if (!canOperate()) return '';
  if (detail.served && detail.status === 'running')
    return button('Stop (work saved)', 'stop', () => undefined);
  const resumable =
    detail.status === 'stale' || (detail.status === 'finished' && detail.state !== 'COMPLETE');
  return resumable ? button('Resume', 'resume', route) : '';
}

/** Another node's task: its row in the control database (its note and diff stay on that node). */
function fleetHeader(task: FleetTaskDetail): HTMLElement {
  return el(
    'p',
    {},
    stateBadge(task.state, fleetStatus(task)),
    ' on node ',
    el('strong', { id: 'task-node', 'data-node': task.node?.id ?? '' }, task.node?.id ?? 'none yet'),
    task.node?.host ? ` (${task.node.host})` : '',
    `, ${task.repoUrl}`,
    task.exitCode === null ? '' : `, exit ${task.exitCode}`,
  );
}

/** The note's Markdown as sanitised HTML (see the header). */
function renderNote(markdown: string): string {
  const html = marked.parse(markdown, { async: false, gfm: true });
  return DOMPurify.sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['img', 'style', 'form', 'input', 'button', 'iframe', 'svg', 'math'],
    FORBID_ATTR: ['style', 'srcset'],
    ALLOWED_URI_REGEXP: /^(?:https?:|#)/i,
  });
}

function showTask(taskId: string): void {
  const header = el('div', { id: 'task-header' });
  const runs = new Map<number, HTMLElement>();
  main().replaceChildren(
    el('p', {}, el('a', { href: '#/' }, '← all tasks')),
    el('h1', {}, taskId),
    header,
    el('h2', {}, 'Timeline'),
    el('ol', { id: 'timeline' }),
    el('h2', {}, 'Acceptance criteria'),
    el('div', { id: 'criteria-box' }),
    el('h2', {}, 'Worker runs'),
    el('div', { id: 'runs' }),
    el('h2', {}, 'Diff'),
    el('pre', { id: 'diff' }),
    el('h2', {}, 'Note'),
    el('article', { id: 'note' }),
  );
  // Another node's task: its plan and its end come from its events (its journal is on that node).
  const fromEvents: Pick<TaskDetail, 'plan' | 'summary'> = { plan: null, summary: null };
  let fleetTask = false;
  // One form per question, kept across refreshes: a new one at every event would drop what the user typed.
  let asked: { question: string; form: HTMLElement } | null = null;
  const questionOf = (question: string | null): HTMLElement | string => {
    if (asked?.question !== question)
      asked = question
        ? {
            question,
            form: canOperate()
              ? questionForm(taskId, question)
              : el('p', { id: 'question' }, el('strong', {}, 'The task asks: '), question),
          }
        : null;
    return asked?.form ?? '';
  };
  const refresh = async () => {
    const answer = await api<TaskPage | FleetTaskDetail>('GET', `/api/tasks/${encodeURIComponent(taskId)}`);
    if ('fleet' in answer) {
      fleetTask = true;
      // Its question, answered here: this server writes the answer for the node that runs the task.
      header.replaceChildren(fleetHeader(answer), questionOf(answer.question));
      document.getElementById('criteria-box')?.replaceChildren(criteria(fromEvents));
      const where = answer.node
        ? `node ${answer.node.id}${answer.node.url ? ` (${answer.node.url})` : ''}`
        : '';
      const away = where ? `On ${where}, which runs the task: its note and diff are there.` : '';
      (document.getElementById('note') as HTMLElement).textContent = away;
      (document.getElementById('diff') as HTMLElement).textContent = away;
      return;
    }
    const detail = answer;
    const question = questionOf(detail.question);
    const subtasks = detail.subtasks.length
      ? el(
          'ul',
          { id: 'subtasks' },
          ...detail.subtasks.map((sub) =>
            el(
              'li',
              { 'data-subtask': sub.id },
              el('a', { href: `#/task/${encodeURIComponent(sub.taskId)}` }, sub.id),
              ` ${sub.title} `,
              el('span', { class: `state state-${sub.state.toLowerCase()}` }, sub.state),
              sub.blockedBy.length ? ` after ${sub.blockedBy.join(', ')}` : '',
            ),
          ),
        )
      : '';
    header.replaceChildren(
      actions(detail),
      el(
        'p',
        {},
        stateBadge(detail.state, detail.status),
        ` ${detail.runs} run(s), $${detail.costUsd.toFixed(4)}, ${detail.branch}`,
      ),
      question,
      subtasks,
      originLine(detail),
      detail.audit.length ? auditList(detail.audit, detail.forgeWeb) : '',
      followupList(detail),
    );
    document.getElementById('criteria-box')?.replaceChildren(criteria(detail));
    // The note and the diff change with the state and after a run, not with every event: fetched then only
    // (the diff is a `git diff` on the server).
    const version = `${detail.state}|${detail.status}|${detail.runs}`;
    if (version === shown) return;
    shown = version;
    // A slower fetch of an earlier version must not overwrite a later one (it would stay, never fetched again).
    const fetchNumber = (fetches += 1);
    const note = await api<string>('GET', `/api/tasks/${encodeURIComponent(taskId)}/note`).catch(() => '');
    const diff = await api<string>('GET', `/api/tasks/${encodeURIComponent(taskId)}/diff`).catch(() => '');
    if (fetchNumber !== fetches) return;
    (document.getElementById('note') as HTMLElement).innerHTML = renderNote(note);
    (document.getElementById('diff') as HTMLElement).textContent = diff;
  };
  let shown = '';
  let fetches = 0;
  let pending: ReturnType<typeof setTimeout> | null = null;
  const soon = () => {
    pending ??= setTimeout(() => {
      pending = null;
      void refresh().catch(() => undefined);
    }, 300);
  };
  void refresh().catch(() => undefined);
  const source = new EventSource(
    `/api/tasks/${encodeURIComponent(taskId)}/events?token=${encodeURIComponent(token())}`,
  );
  source.addEventListener('journal', (message) => {
    const event = JSON.parse((message as MessageEvent<string>).data) as StampedEvent;
    onJournal(event, runs);
    if (event.type === 'plan') fromEvents.plan = event.plan;
    if (event.type === 'task_finished') fromEvents.summary = event.summary;
    if (fleetTask && (event.type === 'plan' || event.type === 'task_finished'))
      document.getElementById('criteria-box')?.replaceChildren(criteria(fromEvents));
    // A note written: fetched again whatever the state says.
    if (event.type === 'note_written') shown = '';
    soon();
  });
  source.addEventListener('end', () => {
    source.close();
    shown = '';
    soon();
  });
  // Nothing is written while a question waits: look now and then.
  const timer = setInterval(soon, 2_000);
  leave = () => {
    source.close();
    clearInterval(timer);
  };
}

function route(): void {
  leave?.();
  leave = null;
  const match = /^#\/task\/(.+)$/.exec(location.hash);
  if (match) showTask(decodeURIComponent(match[1] as string));
  else if (location.hash === '#/memory') showMemory(main(), api, el);
  else showBoard();
}

token();
window.addEventListener('hashchange', route);
void loadActor(() => api('GET', '/api/whoami')).then(route);
