/**
 * What a board refuses in a way the API answers with its own status: a task this server does not run (409), a
 * task the repository does not have (404). Every other refusal is a UserError (400 with its code).
 */
import { UserError } from '../errors.js';

/** A task this server does not run (it may exist: started from a terminal, or by another server). */
export class NotServedError extends UserError {
  constructor(readonly taskId: string) {
    super(
      'usage',
      `Task ${taskId} is not run by this server: stop it where it runs (Ctrl-C), or resume it here.`,
    );
  }
}

/** No task by that id in the board's repository. */
export class TaskNotFoundError extends UserError {
  constructor(readonly taskId: string) {
    super('usage', `No task ${taskId} in this repository.`);
  }
}
