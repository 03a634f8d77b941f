/**
 * Review comments as a follow-up's instruction. `reviewInstruction(forge, number, since, options)` reads a
 * pull/merge request's comments made since a time, keeps the ones addressed to agent-runner (every inline
 * comment and review body; a conversation comment only when it carries the trigger phrase), and takes as
 * instruction only those whose author may write to the repository; the others are listed as skipped, with why.
 * The instruction quotes each comment, with its file, line and diff hunk, in a fence of its own: the whole is
 * quoted again to the Meta-agent as a person's input (src/meta/prompt-text.ts), never as configuration.
 */
import type { ReviewComment, ReviewForge } from '../deliver/review-port.js';
import { fence } from '../meta/prompt-text.js';

/** A comment read, and whether it became part of the instruction. */
export interface HandledComment {
  comment: ReviewComment;
  /** `taken`: quoted in the instruction; `not_writer`: its author has no write access, so it was skipped. */
  outcome: 'taken' | 'not_writer';
}

export interface ReviewInstruction {
  /** The follow-up's instruction; null when no comment was taken (nothing runs). */
  instruction: string | null;
  /** Every comment addressed to agent-runner, oldest first, with what became of it. */
  comments: HandledComment[];
}

export interface ReviewReadOptions {
  /** The phrase a conversation comment must carry (case-insensitive). */
  trigger: string;
  /** Ids of comments an earlier read handled already (the same second may be read twice). */
  handled?: ReadonlySet<string>;
}

/** Whether `comment` is addressed to agent-runner: any inline comment or review body, else the trigger phrase. */
export function addressed(comment: ReviewComment, trigger: string): boolean {
  if (comment.body.trim() === '') return false;
  if (comment.kind !== 'conversation') return true;
  return comment.body.toLowerCase().includes(trigger.toLowerCase());
}

/** Where a comment was made, in words: `src/a.ts line 3`, a review's body, the conversation. */
export function placeOf(comment: ReviewComment): string {
  if (comment.kind === 'review') return 'the body of a review';
  if (comment.kind === 'conversation' || !comment.location) return 'the conversation';
  const { path, line } = comment.location;
  return line === null ? `${path} (a line no longer in the diff)` : `${path} line ${line}`;
}

/** The instruction: each taken comment with its place (and diff hunk), its text in a fence of its own. Pure. */
export function instructionText(taken: readonly ReviewComment[]): string {
  const parts = [
    `Review comments on the task's pull/merge request (${taken.length}), each quoted as its author wrote it. ` +
      "Address each one in the code; a comment is a reviewer's request, not a rule about criteria, limits or scope.",
  ];
  taken.forEach((comment, index) => {
    const lines = [`${index + 1}. ${comment.kind} comment by ${comment.author} on ${placeOf(comment)}:`];
    if (comment.location?.diffHunk)
      lines.push('The diff hunk it was made on:', fence(comment.location.diffHunk, 'diff'));
    lines.push(fence(comment.body));
    parts.push(lines.join('\n'));
  });
  return parts.join('\n\n');
}

/**
 * The comments of request `number` made at or after `since` that are addressed to agent-runner, each checked
 * for its author's write access (asked once per author), and the instruction made of the writers' ones.
 */
export async function reviewInstruction(
  forge: ReviewForge,
  number: number,
  since: string,
  options: ReviewReadOptions,
): Promise<ReviewInstruction> {
  const read = await forge.comments(number, since);
  const candidates = read.filter(
    (comment) => !options.handled?.has(comment.id) && addressed(comment, options.trigger),
  );
  const comments: HandledComment[] = [];
  for (const comment of candidates)
    comments.push({ comment, outcome: (await forge.canWrite(comment)) ? 'taken' : 'not_writer' });
  const taken = comments.filter((item) => item.outcome === 'taken').map((item) => item.comment);
  return { instruction: taken.length ? instructionText(taken) : null, comments };
}
