/** Constrained-YAML replies of a scripted Meta-agent, for end-to-end tests and the demo. */

export interface CriterionSpec {
  id: string;
  description: string;
  critical?: boolean;
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
    ]),
  ].join('\n');
}

export function runWorkerReply(
  prompt: string,
  options: { mode?: 'exec' | 'resume'; patterns?: string[]; reason?: string } = {},
): string {
  return [
    'type: next_action',
    'version: 1',
    'payload:',
    '  decision:',
    '    action: run_worker',
    `    reason: ${JSON.stringify(options.reason ?? 'The work is not done yet.')}`,
    '  used_patterns:',
    ...(options.patterns ?? ['implement_feature', 'commit_work']).map((name) => `    - ${name}`),
    '  worker_call:',
    '    worker_type: codex',
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
