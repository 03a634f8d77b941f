/**
 * One round of a follow-up from review, the same wherever it runs (`followup --from-review` in a terminal or CI,
 * a node of a fleet that took a review's job): read the comments since the record's cursor, react to the ones
 * taken, record the read; after the follow-up (or when nothing ran), the one reply. What to say goes to `say`;
 * a failure to react or reply is said, never thrown over the task's end.
 */
import { ForgeError } from '../deliver/forge-error.js';
import type { Redactor } from '../notes/redact.js';
import { reviewInstruction, type ReviewInstruction } from './review-comments.js';
import { appendReviewRead, reviewCursor } from './review-record.js';
import type { ReviewTarget } from './review-target.js';

function failureText(error: unknown): string {
  return error instanceof ForgeError ? error.failure.message : (error as Error).message;
}

/** Why nothing runs when no comment is a writer's. */
export function noWriterReason(count: number): string {
  return (
    `nothing ran: none of the ${count} comments is from an author with write access to the repository, ` +
    'so none is taken as an instruction; no model was called'
  );
}

/** Reads the comments since the last read, reacts to the ones taken, and records the read. */
export async function readReviewRound(input: {
  target: ReviewTarget;
  runDir: string;
  trigger: string;
  redact: Redactor;
  say: (line: string) => void;
}): Promise<{ read: ReviewInstruction; since: string }> {
  const { target, runDir } = input;
  const requestUrl = target.changeRequest.url;
  const cursor = reviewCursor(runDir, requestUrl);
  const read = await reviewInstruction(target.review, target.request.number, cursor.since, {
    trigger: input.trigger,
    handled: cursor.handled,
  });
  for (const item of read.comments) {
    if (item.outcome !== 'taken') continue;
    try {
      await target.review.react(target.request.number, item.comment);
    } catch (error) {
      input.say(`could not react to comment ${item.comment.id}: ${failureText(error)}`);
    }
  }
  const times = read.comments.map((item) => item.comment.createdAt);
  appendReviewRead(
    runDir,
    {
      url: requestUrl,
      until: times.reduce((newest, at) => (Date.parse(at) > Date.parse(newest) ? at : newest), cursor.since),
      handled: read.comments.map((item) => item.comment.id),
    },
    input.redact,
  );
  return { read, since: cursor.since };
}

/** Posts the reply; returns false (having said why) when the forge refused it. */
export async function postReviewReply(
  target: ReviewTarget,
  body: string,
  say: (line: string) => void,
): Promise<boolean> {
  try {
    const url = await target.review.reply(target.request.number, body);
    say(`replied on the request: ${url}`);
    return true;
  } catch (error) {
    say(`could not reply on the request: ${failureText(error)}`);
    return false;
  }
}
