/**
 * The commander program as the references read it: every command registered, no action run, nothing
 * printed. Which flag sets which configuration key is read from the flags' own config layer (`flagsLayer` of
 * run-command.ts, what `run` and `resume` apply), not written down a second time.
 */
import type { Command } from 'commander';
import { createProgram } from '../cli/program.js';
import { processRedaction, safeOutput } from '../cli/output.js';
import { flagsLayer } from '../cli/run-flags.js';

/** The program, with an output that goes nowhere (the references only read its definitions). */
export function referenceProgram(): Command {
  const redaction = processRedaction({});
  return createProgram({
    output: safeOutput({ out: () => undefined, err: () => undefined, isTTY: false }, redaction),
    redaction,
    env: {},
    cwd: process.cwd(),
    setExitCode: () => undefined,
  });
}

/** Every command below the program, depth first, in the order they were registered. */
export function allCommands(program: Command): Command[] {
  return program.commands.flatMap((command) => [command, ...allCommands(command)]);
}

const PROBE = 'flag-probe-value';

/** For each configuration key a flag sets: the flag's long name (`--model`), probed through `flagsLayer`. */
export function configFlags(program: Command): Map<string, string[]> {
  const flags = new Map<string, string[]>();
  for (const command of allCommands(program))
    for (const option of command.options) {
      const layer = flagsLayer({ [option.attributeName()]: PROBE });
      for (const key of leavesHolding(layer, PROBE)) {
        const names = flags.get(key) ?? [];
        if (option.long && !names.includes(option.long)) names.push(option.long);
        flags.set(key, names);
      }
    }
  return flags;
}

function leavesHolding(value: unknown, probe: string, prefix = ''): string[] {
  if (value === probe) return [prefix];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    leavesHolding(inner, probe, prefix ? `${prefix}.${key}` : key),
  );
}
