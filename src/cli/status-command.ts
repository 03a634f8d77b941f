/**
 * `agent-runner status`: the tasks of this repository, running (a live runner holds the lock), stale (the
 * runner died: `resume` it, `gc` removes its container) or finished, with their containers.
 */
import type { Command } from 'commander';
import { cutAtWord } from '../core/failure-hints.js';
import type { TaskEntry } from '../lifecycle/task-inventory.js';
import { showControls } from '../notes/terminal-text.js';
import { VERSION } from '../version.js';
import type { CommandContext } from './program.js';

/**
 * A status column holds one line: a multi-line reason is joined and clipped (`status --json` has it whole),
 * its terminal controls shown as escapes before the columns are measured (printing shows them the same way).
 */
function oneLine(text: string): string {
  const line = showControls(text.replace(/\s+/g, ' ').trim(), 'one_line');
  return cutAtWord(line, 120);
}

/** A reason's first line (a set-up failure's further lines are its output, in the note). */
const firstLineOf = (text: string) => text.trim().split(/\r?\n/)[0] ?? '';

/** A project's entry first, then its subtasks' and checks' entries under it (indented). */
function grouped(tasks: readonly TaskEntry[]): { task: TaskEntry; child: boolean }[] {
  const parents = new Set(tasks.filter((task) => task.project).map((task) => task.taskId));
  const rows: { task: TaskEntry; child: boolean }[] = [];
  for (const task of tasks) {
    if (task.parent && parents.has(task.parent)) continue;
    rows.push({ task, child: false });
    if (task.project)
      for (const child of tasks.filter((entry) => entry.parent === task.taskId))
        rows.push({ task: child, child: true });
  }
  return rows;
}

/** A project's reason: how it ended (or who holds it) and where each subtask stands. */
function projectDetail(task: TaskEntry, base: string): string {
  const subtasks = task.project?.subtasks ?? [];
  if (subtasks.length === 0) return base;
  const states = subtasks.map((subtask) => `${subtask.id} ${subtask.state}`).join(', ');
  return `${base === '-' ? '' : `${base}; `}subtasks: ${states}`;
}

/** `follow-up N: ` for a task continued by a follow-up (its state and reason are the follow-up's). */
function followupPrefix(task: TaskEntry): string {
  const followup = task.journal?.followup;
  return followup ? `follow-up ${followup.number}: ` : '';
}

/** One line per task (a project's subtasks under it), plus hints for stale tasks and orphaned containers. */
export function formatStatusTable(tasks: readonly TaskEntry[]): string[] {
  if (tasks.length === 0) return ['No tasks in this repository.'];
  const rows = grouped(tasks).map(({ task, child }) =>
    [
      child ? `└ ${task.taskId}` : task.taskId,
      task.status.replace('_', ' '),
      task.state ?? '-',
      task.lastEventAt ?? '-',
      (task.status === 'running' || task.status === 'unknown') && task.lock
        ? `pid ${task.lock.holder.pid} on ${task.lock.holder.hostname} (${task.lock.holder.command})`
        : followupPrefix(task) +
          (task.reason
            ? firstLineOf(task.reason)
            : task.status === 'stale'
              ? 'the runner stopped without finishing'
              : '-'),
    ]
      .map((cell, column) => (column === 4 && task.project ? projectDetail(task, cell) : cell))
      .concat([
        task.containers.length
          ? task.containers
              .map(
                (container) =>
                  `${container.name} ${container.state}${container.kept ? ' (kept)' : container.owner === 'dead' ? ' (orphan)' : ''}`,
              )
              .join(', ')
          : '-',
      ])
      .map(oneLine),
  );
  const header = ['TASK', 'STATUS', 'STATE', 'LAST EVENT', 'HOLDER / REASON', 'CONTAINERS'];
  const widths = header.map((title, column) =>
    Math.min(60, Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length))),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join('  ');
  const lines = [line(header), ...rows.map(line)];
  // A project's subtasks continue with the project (`resume <ID>`), not on their own.
  const stale = tasks.filter((task) => task.status === 'stale' && !task.parent);
  if (stale.length)
    lines.push(
      '',
      `Stale: ${stale.map((task) => task.taskId).join(', ')}. Continue with \`agent-runner resume <TASK-ID>\`.`,
    );
  if (tasks.some((task) => task.status === 'never_started'))
    lines.push('Never started: nothing to resume; `agent-runner gc` removes their run directories.');
  if (
    tasks.some((task) => task.containers.some((container) => container.owner === 'dead' && !container.kept))
  )
    lines.push('Orphaned containers: remove them with `agent-runner gc`.');
  if (tasks.some((task) => task.containers.some((container) => container.kept)))
    lines.push(
      'Kept containers (--keep-sandbox): later runs leave them; remove them with `agent-runner gc`.',
    );
  return lines;
}

export function registerStatusCommand(program: Command, context: CommandContext): void {
  program
    .command('status')
    .description('List the tasks of this repository: running, stale (resumable) and finished')
    .option('--json', 'print the tasks as JSON')
    .option('--repo <url>', 'the tasks of a `run --repo` remote (outside any repository: every cached one)')
    .action(async (options: { json?: boolean; repo?: string }) => {
      // Imported here: the task inventory (journals, locks, containers) is no other command's start.
      const [{ commandRepositories }, { listTasks }] = await Promise.all([
        import('./command-repositories.js'),
        import('../lifecycle/task-inventory.js'),
      ]);
      const repositories = await commandRepositories(options.repo, context);
      const [{ createDockerClient }, { DockerSandboxRuntime }] = await Promise.all([
        import('../sandbox/docker-client.js'),
        import('../sandbox/docker-runtime.js'),
      ]);
      const runtime = new DockerSandboxRuntime(createDockerClient(context.env), {
        version: VERSION,
        env: context.env,
      });
      const listed = await Promise.all(
        repositories.map(async (repository) => ({
          repository,
          ...(await listTasks(repository.root, runtime)),
        })),
      );
      const dockerError = listed.find((entry) => entry.dockerError)?.dockerError ?? null;
      if (options.json) {
        const tasks = listed.flatMap((entry) =>
          entry.tasks.map(({ journal, ...task }) => ({
            ...task,
            runs: journal?.runs.length ?? 0,
            followup: journal?.followup ? { number: journal.followup.number } : null,
            ...(entry.repository.url === null ? {} : { repository: entry.repository.url }),
          })),
        );
        context.output.out(JSON.stringify({ tasks, dockerError }, null, 2));
        return;
      }
      for (const entry of listed) {
        // A cached remote's tasks are headed by its URL: the person knows the repository by that, not the path.
        if (entry.repository.url !== null)
          context.output.out(`${entry.repository.url} (${entry.repository.root})`);
        for (const line of formatStatusTable(entry.tasks)) context.output.out(line);
      }
      if (dockerError)
        context.output.err(`agent-runner: containers not listed: Docker did not answer (${dockerError}).`);
    });
}
