/**
 * The follow-up tests' task: the demo's slugify, a first criterion that holds after the first run, and the one a
 * follow-up adds (punctuation dropped) with the code that satisfies it.
 */

/** slugify that also drops punctuation: what the follow-up asks for. */
export const SLUG_PUNCTUATION_JS =
  "exports.slugify = (text) => text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean).join('-');\n";

export const AC1 = {
  id: 'AC-1',
  description: 'slugify joins lower-case words with -',
  check: {
    kind: 'command',
    command: `node -e "process.exit(require('./slug.js').slugify('Hello Big World') === 'hello-big-world' ? 0 : 1)"`,
  },
};

export const AC2 = {
  id: 'AC-2',
  description: 'slugify drops punctuation',
  check: {
    kind: 'command',
    command: `node -e "process.exit(require('./slug.js').slugify('Hello, World!') === 'hello-world' ? 0 : 1)"`,
  },
};
