/** Constrained-YAML replies of a scripted Meta-agent, for end-to-end tests and the demo. */

export interface CriterionSpec {
  id: string;
  description: string;
  critical?: boolean;
  /** The criterion's check, as the model writes it (`kind`, `command`, `file`, ...). */
  check?: Record<string, string>;
}

const indent = (text: string, spaces: number) =>
  text
    .split('\n')
    .map((line) => (line ? ' '.repeat(spaces) + line : line))
    .join('\n');

export function planReply(taskId: string, criteria: CriterionSpec[]): string {
  return [
    'type: plan_task',
    'version: 1',
    'payload:',
    `  task_id: ${taskId}`,
    '  acceptance_criteria:',
    ...criteria.flatMap((criterion) => [
      `    - id: ${criterion.id}`,
      `      description: ${JSON.stringify(criterion.description)}`,
      '      type: functional',
      `      critical: ${criterion.critical ?? true}`,
      ...(criterion.check
        ? [
            '      check:',
            ...Object.entries(criterion.check).map(
              ([key, value]) => `        ${key}: ${JSON.stringify(value)}`,
            ),
          ]
        : []),
    ]),
  ].join('\n');
}

export function runWorkerReply(
  prompt: string,
  options: { mode?: 'exec' | 'resume'; patterns?: string[]; reason?: string; workerType?: string } = {},
): string {
  const patterns = options.patterns ?? ['implement_feature', 'commit_work'];
  return [
    'type: next_action',
    'version: 1',
    'payload:',
    '  decision:',
    '    action: run_worker',
    `    reason: ${JSON.stringify(options.reason ?? 'The work is not done yet.')}`,
    ...(patterns.length === 0
      ? ['  used_patterns: []']
      : ['  used_patterns:', ...patterns.map((name) => `    - ${name}`)]),
    '  worker_call:',
    `    worker_type: ${options.workerType ?? 'codex'}`,
    `    mode: ${options.mode ?? 'exec'}`,
    '    prompt: |',
    indent(prompt, 6),
  ].join('\n');
}

export function decisionReply(
  action: 'mark_complete' | 'abort' | 'ask_human',
  reason: string,
  question?: string,
): string {
  return [
    'type: next_action',
    'version: 1',
    'payload:',
    '  decision:',
    `    action: ${action}`,
    `    reason: ${JSON.stringify(reason)}`,
    '  used_patterns: []',
    ...(question ? [`  question: ${JSON.stringify(question)}`] : []),
  ].join('\n');
}

export function assessmentReply(satisfied: boolean, ids: string[], summary: string): string {
  return [
    'type: completion_assessment',
    'version: 1',
    'payload:',
    `  all_criteria_satisfied: ${satisfied}`,
    `  summary: ${JSON.stringify(summary)}`,
    '  by_criterion:',
    ...ids.flatMap((id) => [
      `    - id: ${id}`,
      `      status: ${satisfied ? 'passed' : 'failed'}`,
      `      comment: ${JSON.stringify(satisfied ? 'checked' : 'not yet')}`,
    ]),
    '  retrospective:',
    `    - ${JSON.stringify(satisfied ? 'Went as planned.' : 'Needs another run.')}`,
  ].join('\n');
}

/** One subtask of a scripted decomposition. */
export interface SubtaskSpec {
  id: string;
  title: string;
  write: string[];
  blockedBy?: string[];
  /** A command check for the subtask's criterion (none: the criterion has no check). */
  check?: string;
}

/** `plan_task` answered with subtasks (each with one functional criterion). */
export function decompositionReply(taskId: string, subtasks: SubtaskSpec[]): string {
  return [
    'type: plan_task',
    'version: 1',
    'payload:',
    `  task_id: ${taskId}`,
    '  subtasks:',
    ...subtasks.flatMap((subtask) => [
      `    - id: ${subtask.id}`,
      `      title: ${subtask.title}`,
      '      prd: |',
      `        ${subtask.title}, with a test.`,
      '      acceptance_criteria:',
      '        - id: AC-1',
      `          description: ${subtask.title} works and npm test passes.`,
      '          type: functional',
      '          critical: true',
      ...(subtask.check
        ? [
            '          check:',
            '            kind: command',
            `            command: ${JSON.stringify(subtask.check)}`,
          ]
        : []),
      '      write_scope:',
      ...subtask.write.map((glob) => `        - ${JSON.stringify(glob)}`),
      `      blocked_by: [${(subtask.blockedBy ?? []).join(', ')}]`,
    ]),
  ].join('\n');
}

/** `review` with verdict ok and no findings. */
export function reviewReply(taskId: string): string {
  return [
    'type: review',
    'version: 1',
    'payload:',
    `  task_id: ${taskId}`,
    '  verdict: ok',
    '  summary: Does what the subtask asks; the tests cover it.',
    '  findings: []',
  ].join('\n');
}
