/** GitHub's published webhook example payloads (@octokit/webhooks-examples), copied for a test to set fields. */
import { createRequire } from 'node:module';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Payload = Record<string, any>;

const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as {
  name: string;
  examples: Payload[];
}[];

/** GitHub's published example of `name` (with `action`, when given), copied so a case may set its fields. */
export function example(name: string, action?: string): Payload {
  const found = examples
    .find((entry) => entry.name === name)
    ?.examples.find((payload) => action === undefined || payload.action === action);
  if (!found) throw new Error(`no published example ${name} ${action ?? ''}`);
  return structuredClone(found);
}

/** GitHub's published `issues.labeled` example: issue `number` of `acme/app` (at `cloneUrl`) labelled by `sender`. */
export function labelledIssue(input: {
  number: number;
  title: string;
  body: string;
  cloneUrl: string;
  sender: string;
}): Payload {
  const payload = example('issues', 'labeled');
  payload.label.name = 'agent-runner';
  payload.issue.number = input.number;
  payload.issue.title = input.title;
  payload.issue.body = input.body;
  payload.repository.full_name = 'acme/app';
  payload.repository.name = 'app';
  payload.repository.clone_url = input.cloneUrl;
  payload.sender.login = input.sender;
  return payload;
}
