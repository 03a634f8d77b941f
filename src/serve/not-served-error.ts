/** The board's refusal to act on a task it does not run. */
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
