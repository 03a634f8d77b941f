/**
 * One problem found in a Meta-agent reply: where it is (a dotted path into the message and/or a line and
 * column of the reply) and what is wrong. These lines are sent back to the model verbatim when it is asked
 * to repair its reply, so they must be precise and actionable.
 */
export interface ProtocolIssue {
  /** Dotted path into the message, e.g. `payload.decision.action` or `payload.by_criterion[1].id`. */
  path?: string;
  /** 1-based line in the model's full reply (fence and prose included). */
  line?: number;
  /** 1-based column. */
  column?: number;
  message: string;
}

/** `payload.decision.action (line 5, column 13): ...` — the form sent back to the model and shown to users. */
export function formatProtocolIssue(issue: ProtocolIssue): string {
  const where: string[] = [];
  if (issue.line !== undefined) {
    where.push(
      issue.column === undefined ? `line ${issue.line}` : `line ${issue.line}, column ${issue.column}`,
    );
  }
  if (issue.path !== undefined) {
    return where.length > 0
      ? `${issue.path} (${where.join('')}): ${issue.message}`
      : `${issue.path}: ${issue.message}`;
  }
  return where.length > 0 ? `${where.join('')}: ${issue.message}` : issue.message;
}

/** Formats a path of keys and indexes as `a.b[1].c`. */
export function formatDottedPath(segments: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out || '(top level)';
}
