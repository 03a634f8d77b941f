/** The Meta-agent: what the loop calls, the MetaModel port, and its adapters. */
export * from './meta-agent.js';
export * from './meta-context.js';
export * from './meta-model.js';
export * from './openai-chat-model.js';
export * from './prompt-context.js';
export * from './scripted-meta-model.js';
