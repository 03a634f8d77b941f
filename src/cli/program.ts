/**
 * The commander program. Each command lives in its own file and registers itself here.
 * Commands throw typed errors; `main.ts` is the only place that prints them and exits.
 */
import type { CommanderError } from 'commander';
import { Command } from 'commander';
import { UserError } from '../errors.js';
import type { Redaction } from '../notes/redact.js';
import { VERSION } from '../version.js';
import type { SafeOutput } from './output.js';
import { registerPlanCommand } from './plan-command.js';
import { registerDoctorCommand } from './doctor-command.js';
import { registerImageCommand } from './image-command.js';
import { registerRunCommand } from './run-command.js';
import { registerResumeCommand } from './resume-command.js';
import { registerFollowupCommand } from './followup-command.js';
import { registerStatusCommand } from './status-command.js';
import { registerGcCommand } from './gc-command.js';
import { registerServeCommand } from './serve-command.js';
import { registerClientCommands } from './client-commands.js';
import { registerVerifyCommand } from './verify-command.js';
import { registerDeliverCommand } from './deliver-command.js';
import { registerControlCommand } from './control-command.js';
import { registerTokenCommands } from './token-command.js';
import { registerMemoryCommands } from './memory-command.js';
import { addExamples } from './command-examples.js';

/** What every command gets: where to print, and where to record its exit code. */
export interface CommandContext {
  /** Already safe: what is written here passes {@link redaction} and has its terminal controls shown. */
  output: SafeOutput;
  /** The process's redaction point; a command adds the secrets of the configuration it loads. */
  redaction: Redaction;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Set by a command that finishes with a non-zero code without an error (e.g. NEEDS_REVIEW → 3). */
  setExitCode(code: number): void;
}

export function createProgram(context: CommandContext): Command {
  const program = new Command('agent-runner')
    .description(
      'Drives a coding agent (Codex CLI) in a per-task Docker sandbox until a PRD is done, and leaves a note.',
    )
    .version(VERSION, '-V, --version')
    .showHelpAfterError('(run agent-runner --help for usage)')
    .configureOutput({
      writeOut: (text) => context.output.out(text),
      writeErr: (text) => context.output.err(text),
    })
    .exitOverride();
  registerRunCommand(program, context);
  registerResumeCommand(program, context);
  registerFollowupCommand(program, context);
  registerStatusCommand(program, context);
  registerGcCommand(program, context);
  registerImageCommand(program, context);
  registerDoctorCommand(program, context);
  registerPlanCommand(program, context);
  registerServeCommand(program, context);
  registerClientCommands(program, context);
  registerVerifyCommand(program, context);
  registerDeliverCommand(program, context);
  registerControlCommand(program, context);
  registerTokenCommands(program, context);
  registerMemoryCommands(program, context);
  addExamples(program);
  return program;
}

/** Commander's own usage errors become UserErrors (exit 2); help and version are not errors. */
export function translateCommanderError(error: CommanderError): UserError | null {
  if (['commander.helpDisplayed', 'commander.version', 'commander.help'].includes(error.code)) return null;
  return new UserError('usage', error.message.replace(/^error: /, ''), { cause: error });
}
