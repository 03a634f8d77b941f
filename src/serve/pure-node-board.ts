/**
 * The board of a pure node of the fleet (`serve --control` started in a directory that is no git repository):
 * it runs the fleet's tasks only (each on its `--repo` cache, through the fleet's runner), so whatever needs a
 * local repository (a task started or resumed without `repo`) is refused with one message that says how to
 * queue the task instead. Its list holds nothing of its own; the fleet's tasks come from the database.
 */
import { UserError } from '../errors.js';
import type { StartTaskRequest } from './api-schemas.js';
import { TaskBoard } from './task-board.js';

/** What a pure node answers to a request that needs a local repository (to start a task, or to resume one). */
export function noRepositoryMessage(
  directory: string,
  asked: 'start' | 'resume' | 'followup' = 'start',
): string {
  const node =
    `This node has no repository (it was started in ${directory}, not a git repository): it runs the fleet's ` +
    'tasks only. ';
  if (asked === 'followup')
    return (
      `${node}Follow a fleet task up from anywhere with its remote: \`agent-runner followup <PR URL>\` or ` +
      '`agent-runner followup agent-runner/<ID> --repo URL` (the task is rebuilt from the state pushed with its branch).'
    );
  return asked === 'start'
    ? `${node}Give \`repo\` (the remote repository's URL) in the request to queue the task on the fleet, ` +
        'or start `agent-runner serve` in a repository to run tasks there.'
    : `${node}A fleet task is resumed by the fleet (another node takes over a task whose node stopped); ` +
        "resume a task of a repository through that repository's server (`agent-runner resume ID` there).";
}

export class PureNodeBoard extends TaskBoard {
  override start(request: StartTaskRequest): Promise<string> {
    void request;
    return Promise.reject(new UserError('repository_invalid', noRepositoryMessage(this.repoRoot)));
  }

  /** Every follow-up, as a resume: no journal, no branch is here (`agent-runner followup PR-URL` works anywhere). */
  override followup(taskId: string): Promise<string> {
    void taskId;
    return Promise.reject(
      new UserError('repository_invalid', noRepositoryMessage(this.repoRoot, 'followup')),
    );
  }

  /** Every resume, whether or not the fleet knows the task (the API's 400, not a 404): no journal is here. */
  override resume(taskId: string): Promise<string> {
    void taskId;
    return Promise.reject(new UserError('repository_invalid', noRepositoryMessage(this.repoRoot, 'resume')));
  }
}
