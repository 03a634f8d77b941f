import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeConstrainedYaml } from '../../src/protocol/constrained-yaml.js';
import { MESSAGE_TYPES, type MessageType } from '../../src/protocol/messages.js';
import { parseMessage, type MessageCheckContext } from '../../src/protocol/parse-message.js';
import { formatProtocolIssue } from '../../src/protocol/protocol-issue.js';

const protocolsDir = path.resolve(import.meta.dirname, '../../protocols');

function errorsOf(reply: string, type: MessageType, context: MessageCheckContext = {}): string[] {
  const result = parseMessage(reply, type, context);
  if (result.ok) throw new Error(`expected errors, got ${JSON.stringify(result.message)}`);
  return result.issues.map(formatProtocolIssue);
}

const nextAction = (payload: string) => `type: next_action\nversion: 1\npayload:\n${payload}`;

const PLAN = `type: plan_task
version: 1
payload:
  task_id: T-1
  acceptance_criteria:
    - id: AC-1
      description: it works
      type: functional
      critical: true
      check:
        kind: command
        command: npm test
    - id: AC-2
      description: documented
      type: documentation
      critical: false
`;

const ASSESSMENT = `type: completion_assessment
version: 1
payload:
  all_criteria_satisfied: false
  summary: half done
  by_criterion:
    - id: AC-1
      status: passed
      comment: npm test exited 0
    - id: AC-2
      status: unknown
      comment: ""
`;

describe('protocols/ examples', () => {
  it('has exactly one example per message type', () => {
    const files = readdirSync(protocolsDir).filter((name) => name.endsWith('.yaml'));
    expect(files.sort()).toEqual(MESSAGE_TYPES.map((type) => `${type}.yaml`).sort());
  });

  it.each(MESSAGE_TYPES)('%s.yaml is a valid message', (type) => {
    const text = readFileSync(path.join(protocolsDir, `${type}.yaml`), 'utf8');
    const result = parseMessage(text, type, {
      knownPatterns: ['implement_feature', 'run_all_checks'],
      workerTypes: ['codex'],
      acceptanceCriterionIds: ['AC-1', 'AC-2', 'AC-3'],
    });
    expect(result.ok ? 'valid' : result.issues.map(formatProtocolIssue)).toBe('valid');
  });

  it('the README documents every message type and refused feature', () => {
    const readme = readFileSync(path.join(protocolsDir, 'README.md'), 'utf8');
    for (const word of [...MESSAGE_TYPES, 'anchor', 'alias', 'tag', '...', 'tab', 'duplicate', '[a, b]'])
      expect(readme).toContain(word);
  });
});

describe("the specification's own example messages (protocols/spec/)", () => {
  const specDir = path.join(protocolsDir, 'spec');
  const read = (type: MessageType) => readFileSync(path.join(specDir, `${type}.yaml`), 'utf8');

  it.each(MESSAGE_TYPES)('%s validates as written', (type) => {
    const result = parseMessage(read(type), type, {
      taskId: 'TASK-123',
      knownPatterns: ['implement_feature'],
      workerTypes: ['codex'],
      acceptanceCriterionIds: ['AC-1', 'AC-2', 'AC-3'],
    });
    expect(result.ok ? 'valid' : result.issues.map(formatProtocolIssue)).toBe('valid');
  });

  it('keeps free criterion types and unknown check kinds exactly as written', () => {
    const result = parseMessage(read('plan_task'), 'plan_task');
    if (!result.ok) throw new Error(result.issues.map(formatProtocolIssue).join('\n'));
    const [e2e, unit] = result.message.payload.acceptance_criteria;
    expect(e2e).toEqual({
      id: 'AC-1',
      description: 'A logged-in user can reset their password from the settings page',
      type: 'e2e',
      critical: true,
      check: {
        kind: 'playwright',
        file: 'tests/e2e/password-reset.spec.ts',
        test_name: 'user can reset password',
      },
    });
    expect(unit?.type).toBe('unit');
  });

  it('still refuses a check kind that is not a label, and a command check without its command', () => {
    const broken = read('plan_task')
      .replace('kind: "playwright"', 'kind: "play wright!"')
      .replace('command: "npm run build"', 'file: "x"');
    expect(errorsOf(broken, 'plan_task')).toEqual([
      expect.stringMatching(/^payload\.acceptance_criteria\[0\]\.check\.kind .*short label/),
      expect.stringMatching(
        /^payload\.acceptance_criteria\[2\]\.check\.command .*required when kind is command/,
      ),
    ]);
  });
});

describe('valid messages', () => {
  it('plan_task', () => {
    const result = parseMessage(PLAN, 'plan_task', { taskId: 'T-1' });
    expect(result.ok && result.message.payload.acceptance_criteria.map((criterion) => criterion.id)).toEqual([
      'AC-1',
      'AC-2',
    ]);
  });

  it('next_action run_worker, with used_patterns defaulting to []', () => {
    const reply = nextAction(
      '  decision:\n    action: run_worker\n    reason: start\n  worker_call:\n    worker_type: codex\n    mode: exec\n    prompt: |\n      Do it.\n',
    );
    const result = parseMessage(reply, 'next_action', { knownPatterns: [], workerTypes: ['codex'] });
    expect(result.ok && result.message.payload).toEqual({
      decision: { action: 'run_worker', reason: 'start' },
      used_patterns: [],
      worker_call: { worker_type: 'codex', mode: 'exec', prompt: 'Do it.\n' },
    });
  });

  it('next_action ask_human with a question', () => {
    const reply = nextAction(
      '  decision:\n    action: ask_human\n    reason: unclear\n  question: Which database?\n',
    );
    expect(parseMessage(reply, 'next_action').ok).toBe(true);
  });

  it('completion_assessment', () => {
    const result = parseMessage(ASSESSMENT, 'completion_assessment', {
      acceptanceCriterionIds: ['AC-1', 'AC-2'],
    });
    expect(result.ok && result.message.payload.retrospective).toEqual([]);
  });

  it('a message written by the writer is read back', () => {
    const message = {
      type: 'next_action',
      version: 1,
      payload: { decision: { action: 'abort', reason: 'impossible: needs network' }, used_patterns: [] },
    };
    const result = parseMessage(writeConstrainedYaml(message), 'next_action');
    expect(result.ok && result.message).toEqual(message);
  });

  it('a fenced reply with prose around it', () => {
    const reply = `I propose:\n\n\`\`\`yaml\n${PLAN}\`\`\`\n\nTell me if you want changes.`;
    expect(parseMessage(reply, 'plan_task').ok).toBe(true);
  });
});

describe('invalid messages: precise errors with dotted paths and reply lines', () => {
  it('wrong types', () => {
    const errors = errorsOf(
      PLAN.replace('critical: true', 'critical: "yes"').replace('description: it works', 'description: 42'),
      'plan_task',
    );
    expect(errors).toEqual([
      'payload.acceptance_criteria[0].description (line 7, column 20): Invalid input: expected string, received number',
      'payload.acceptance_criteria[0].critical (line 9, column 17): Invalid input: expected boolean, received string',
    ]);
  });

  it('unknown action', () => {
    const errors = errorsOf(nextAction('  decision:\n    action: deploy\n    reason: go\n'), 'next_action');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^payload\.decision\.action \(line 5, column 13\): Invalid option: expected one of "run_worker"/,
    );
  });

  it('missing worker_call for run_worker', () => {
    expect(
      errorsOf(nextAction('  decision:\n    action: run_worker\n    reason: go\n'), 'next_action'),
    ).toEqual(['payload.worker_call (line 4, column 3): required when decision.action is run_worker']);
  });

  it('worker_call with another action, and ask_human without a question', () => {
    const errors = errorsOf(
      nextAction(
        '  decision:\n    action: ask_human\n    reason: go\n  worker_call:\n    worker_type: codex\n    mode: exec\n    prompt: x\n',
      ),
      'next_action',
    );
    expect(errors).toEqual([
      'payload.worker_call (line 8, column 5): only allowed when decision.action is run_worker (it is ask_human); remove it',
      'payload.question (line 4, column 3): required when decision.action is ask_human',
    ]);
  });

  it('missing required field and unknown key', () => {
    const errors = errorsOf(nextAction('  decision:\n    action: abort\n  extra: 1\n'), 'next_action');
    expect(errors).toEqual([
      'payload.decision.reason (line 5, column 5): required (expected string)',
      'payload.extra (line 6, column 3): unknown key; remove it',
    ]);
  });

  it('unknown pattern name', () => {
    const reply = nextAction(
      '  decision:\n    action: abort\n    reason: no\n  used_patterns:\n    - implement_feature\n    - make_coffee\n',
    );
    expect(
      errorsOf(reply, 'next_action', { knownPatterns: ['implement_feature', 'run_all_checks'] }),
    ).toEqual([
      'payload.used_patterns[1] (line 9, column 7): unknown pattern `make_coffee`; the known patterns are: implement_feature, run_all_checks',
    ]);
  });

  it('unknown worker type and resume without an earlier thread', () => {
    const reply = nextAction(
      '  decision:\n    action: run_worker\n    reason: go\n  worker_call:\n    worker_type: aider\n    mode: resume\n    prompt: x\n',
    );
    expect(errorsOf(reply, 'next_action', { workerTypes: ['codex'], canResume: false })).toEqual([
      'payload.worker_call.worker_type (line 8, column 18): unknown worker type `aider`; use one of: codex',
      'payload.worker_call.mode (line 9, column 11): there is no earlier worker thread to resume; use `mode: exec`',
    ]);
  });

  it('unknown and missing AC ids in an assessment', () => {
    const reply = ASSESSMENT.replace('id: AC-2', 'id: AC-9');
    expect(errorsOf(reply, 'completion_assessment', { acceptanceCriterionIds: ['AC-1', 'AC-2'] })).toEqual([
      "payload.by_criterion[1].id (line 10, column 11): unknown acceptance criterion `AC-9`; the plan's criteria are: AC-1, AC-2",
      'payload.by_criterion (line 7, column 5): no entry for AC-2; give exactly one entry per acceptance criterion',
    ]);
  });

  it('all_criteria_satisfied contradicting by_criterion', () => {
    const reply = ASSESSMENT.replace('all_criteria_satisfied: false', 'all_criteria_satisfied: true');
    expect(errorsOf(reply, 'completion_assessment')).toEqual([
      'payload.all_criteria_satisfied (line 4, column 27): is true but AC-2 did not pass; make them agree',
    ]);
  });

  it('duplicate AC ids and a task id other than the one given', () => {
    const reply = PLAN.replace('id: AC-2', 'id: AC-1');
    expect(errorsOf(reply, 'plan_task')).toEqual([
      'payload.acceptance_criteria[1].id (line 13, column 11): duplicate id `AC-1`; ids must be unique',
    ]);
    expect(errorsOf(PLAN, 'plan_task', { taskId: 'OTHER' })).toEqual([
      'payload.task_id (line 4, column 12): is `T-1` but the task id is `OTHER`; use it unchanged',
    ]);
  });

  it('unknown version', () => {
    expect(errorsOf(PLAN.replace('version: 1', 'version: 2'), 'plan_task')).toEqual([
      'version (line 2, column 10): unsupported version `2`; this runner speaks version 1',
    ]);
  });

  it('unknown type, and a known type other than the one asked for', () => {
    expect(errorsOf(PLAN.replace('type: plan_task', 'type: plan'), 'plan_task')).toEqual([
      'type (line 1, column 7): unknown message type `plan`; expected `plan_task` (known types: plan_task, next_action, completion_assessment)',
    ]);
    expect(errorsOf(PLAN, 'next_action')[0]).toBe(
      'type (line 1, column 7): a `next_action` message was asked for, not `plan_task`',
    );
  });

  it('a top level that is not a map', () => {
    expect(errorsOf('- a\n- b\n', 'plan_task')).toEqual([
      'line 1, column 1: the message must be a map with the keys type, version and payload',
    ]);
  });

  it('YAML errors inside a fence point at lines of the whole reply', () => {
    const reply = `Here:\n\`\`\`yaml\n${PLAN.replace('task_id: T-1', 'task_id: &id T-1')}\`\`\`\n`;
    expect(errorsOf(reply, 'plan_task')).toEqual([
      'line 6, column 12: the anchor `&id` is refused: anchors and aliases are not allowed, write each value out in full',
    ]);
  });

  it('prose around unfenced YAML', () => {
    expect(errorsOf(`Sure! Here is the plan.\n${PLAN}`, 'plan_task')[0]).toMatch(
      /^line 1, column 1: text before the YAML document/,
    );
  });
});
