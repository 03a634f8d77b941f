/**
 * The worker prompt: task header, acceptance criteria, scope, the chosen patterns' instructions and the
 * Meta-agent's own instruction, rendered from `templates/worker-prompt.md.hbs`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Handlebars from 'handlebars';
import { PACKAGE_ROOT } from '../version.js';
import type { WorkerPromptInput, WorkerPromptPort } from '../core/ports.js';

let compiled: Handlebars.TemplateDelegate<WorkerPromptInput> | undefined;

/** Renders the worker prompt; the template is read and compiled once per process. */
export function renderWorkerPrompt(input: WorkerPromptInput): string {
  compiled ??= Handlebars.compile<WorkerPromptInput>(
    readFileSync(path.join(PACKAGE_ROOT, 'templates', 'worker-prompt.md.hbs'), 'utf8'),
    { noEscape: true, strict: false },
  );
  return (
    compiled(input)
      .replace(/\n{3,}/g, '\n\n')
      .trim() + '\n'
  );
}

/** The worker prompt port of the loop: `templates/worker-prompt.md.hbs`. */
export const workerPromptTemplate: WorkerPromptPort = { render: renderWorkerPrompt };
