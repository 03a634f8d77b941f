/**
 * The one reply agent-runner posts on a pull/merge request after reading its review: for each comment, what
 * became of it (taken into the follow-up, or skipped and why), then the follow-up's state, how the plan changed,
 * the criteria table and how to verify; or, when nothing ran, why. Every text that came from a commenter, the
 * worker or a model is redacted first, then made inert for the forge (no live mention, reference, link or
 * markup: src/deliver/forge-text.ts through the request body's helpers); an author is named in a code span, so
 * never notified.
 */
import { describePlanChanges } from '../core/followup.js';
import type { TaskSummary } from '../core/types.js';
import { codeSpan, criteriaSection, inlineText, redactedRecords } from '../deliver/change-request-body.js';
import { NOTE_LIMITS } from '../notes/markdown-text.js';
import type { Redactor } from '../notes/redact.js';
import { placeOf, type HandledComment } from './review-comments.js';

/** How much of a comment the reply quotes back. */
const QUOTED_CHARACTERS = 120;

export interface ReviewReplyInput {
  /** The request's page: what `agent-runner verify` is given. */
  requestUrl: string;
  comments: readonly HandledComment[];
  /** The follow-up's summary; null when nothing ran. */
  summary: TaskSummary | null;
  /** Why nothing ran, or why the follow-up stopped before a summary (null when it ended with one). */
  reason: string | null;
  /** Nothing was read (the task could not be rebuilt): the comments stay for the next follow-up from review. */
  unread?: boolean;
  redact: Redactor;
}

function commentLine(item: HandledComment, index: number, summary: TaskSummary | null): string {
  const { comment } = item;
  const said = inlineText(comment.body.replace(/\s+/g, ' ').trim(), QUOTED_CHARACTERS);
  const where = inlineText(placeOf(comment), NOTE_LIMITS.code);
  const done =
    item.outcome === 'not_writer'
      ? 'skipped: its author has no write access to the repository, so it is not taken as an instruction'
      : summary?.followup
        ? `taken into follow-up ${summary.followup.number}, which ended ${summary.state}`
        : 'taken, but the follow-up did not run to its end';
  return `${index + 1}. ${comment.kind} comment by ${codeSpan(comment.author, NOTE_LIMITS.label)} on ${where} (“${said}”): ${done}.`;
}

/** The reply's Markdown: one comment on the request, redacted and inert. Pure. */
export function reviewReply(input: ReviewReplyInput): string {
  const { redact } = input;
  const comments = redactedRecords(input.comments, redact);
  const summary = input.summary ? redactedRecords(input.summary, redact) : null;
  const lines: string[] = [];
  if (summary) {
    const number = summary.followup?.number;
    lines.push(
      `**agent-runner: follow-up${number ? ` ${number}` : ''} of task ${codeSpan(summary.taskId, NOTE_LIMITS.code)} ended ${summary.state}** — ${inlineText(summary.reason)}`,
    );
  } else lines.push(`**agent-runner** — ${inlineText(redact(input.reason ?? 'nothing ran'))}`);
  lines.push('', '### Review comments', '');
  if (input.unread)
    lines.push('The comments were not read: the next follow-up from review of this request takes them.');
  else if (comments.length === 0) lines.push('No comment addressed to agent-runner was found.');
  comments.forEach((item, index) => lines.push(commentLine(item, index, summary)));
  if (summary) {
    if (summary.followup?.changes) {
      const changes = describePlanChanges(summary.followup.changes);
      if (changes.length)
        lines.push('', '### The plan', '', ...changes.map((line) => `- ${inlineText(line)}`));
    }
    if (summary.headSha) lines.push('', `The branch's head is now ${codeSpan(summary.headSha, 40)}.`);
    lines.push('', criteriaSection(summary).replace(/^## /, '### '));
    if (input.reason) lines.push('', inlineText(redact(input.reason)));
  }
  lines.push(
    '',
    '### How to verify',
    '',
    "Run the recorded checks again on the request's head, in a fresh sandbox:",
    '',
    '```sh',
    `agent-runner verify ${input.requestUrl.replace(/[\s`]/g, '')}`,
    '```',
  );
  return redact(lines.join('\n')) + '\n';
}
