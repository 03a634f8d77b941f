/** The constrained-YAML protocol of the Meta-agent: reader/writer, message schemas, reply parsing. */
export * from './constrained-yaml.js';
export * from './extract-yaml.js';
export * from './messages.js';
export * from './parse-message.js';
export * from './protocol-issue.js';
export * from './decomposition.js';
export * from './review.js';
