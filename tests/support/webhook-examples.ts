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
