/**
 * `agent-runner plan --prd spec.md [--json] [--task-id ID]`: runs only the Meta-agent's plan step and prints
 * the acceptance criteria. Every prompt and reply is written to `.agent-runner/runs/<TASK-ID>/meta/`.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import { totalTokens } from '../core/usage.js';
import { UserError } from '../errors.js';
import { recordNotStarted } from '../lifecycle/never-started.js';
import { configSecrets } from '../notes/redact.js';
import { assertValidTaskId } from '../workspace/layout.js';
import { loadPrd } from '../prd/load-prd.js';
import { writeConstrainedYaml } from '../protocol/constrained-yaml.js';
import type { CommandContext } from './program.js';

const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/**
 * A task id from the PRD's file name (`docs/add-login.md` → `ADD-LOGIN`): deterministic, so planning the
 * same PRD twice writes its logs to the same place.
 */
export function taskIdFromPrdPath(file: string): string {
  const base = path.basename(file).replace(/\.[^.]*$/, '');
  const id = base
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  return id || 'TASK';
}

interface PlanOptions {
  prd: string;
  json?: boolean;
  taskId?: string;
}

export function registerPlanCommand(program: Command, context: CommandContext): void {
  program
    .command('plan')
    .description('Turn a PRD into acceptance criteria (runs only the Meta-agent plan step) and print them')
    .requiredOption('--prd <file>', 'the PRD (Markdown or plain text, at most 256 KiB)')
    .option('--json', 'print JSON instead of YAML')
    .option('--task-id <id>', 'the task id (default: from the PRD file name, e.g. add-login.md → ADD-LOGIN)')
    .action(async (options: PlanOptions) => {
      if (options.taskId !== undefined && !TASK_ID.test(options.taskId)) {
        throw new UserError(
          'usage',
          `Invalid --task-id "${options.taskId}": use 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit.`,
        );
      }
      const prdPath = path.resolve(context.cwd, options.prd);
      const prd = await loadPrd(prdPath);
      const taskId = options.taskId ?? taskIdFromPrdPath(prdPath);
      // The one task-id rule: the id the plan must carry is one `run` could use for its branch.
      assertValidTaskId(taskId);
      const config = await loadConfig({ repoRoot: context.cwd, env: context.env });
      const secrets = configSecrets(config, context.env);
      context.redaction.add(secrets.values, secrets.patterns);
      const [{ createMetaAgent }, { createOpenAiChatModel }] = await Promise.all([
        import('../meta/meta-agent.js'),
        import('../meta/openai-chat-model.js'),
      ]);
      const model = createOpenAiChatModel(config, context.env);
      const logDir = path.join(context.cwd, '.agent-runner', 'runs', taskId, 'meta');
      const agent = createMetaAgent({ model, config, logDir, redact: context.redaction.redact });
      context.output.err(
        `Planning ${taskId} with ${config.meta.model}; prompts and replies go to ${path.relative(context.cwd, logDir)}/`,
      );
      // How the plan ended is kept beside its logs: `status` shows it, `gc` removes the directory.
      const result = await agent.plan(prd, { taskId }).catch((error: unknown) => {
        recordNotStarted(path.dirname(logDir), 'plan', (error as Error).message);
        throw error;
      });
      recordNotStarted(path.dirname(logDir), 'plan', null);
      const payload = result.message.payload;
      context.output.out(options.json ? JSON.stringify(payload, null, 2) : writeConstrainedYaml(payload));
      const cost = result.usage.costUsd === 0 ? '' : `, $${result.usage.costUsd.toFixed(4)}`;
      context.output.err(
        `${payload.acceptance_criteria.length} acceptance criteria; ${result.attempts} model call(s), ${totalTokens(result.usage)} tokens${cost}.`,
      );
    });
}
