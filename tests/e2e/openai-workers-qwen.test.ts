/** Qwen Code as a worker over the Responses API and Chat Completions (cases in tests/support/openai-worker-cases.ts). */
import { describeOpenAiWorker } from '../support/openai-worker-cases.js';

describeOpenAiWorker('qwen');
