/**
 * The command reference (docs/commands.md), generated from the commander definitions (src/cli/) and the
 * examples every `--help` ends with (src/cli/command-examples.ts), in the same order and words as `--help`.
 * A command without a one-line purpose or with fewer than two examples stops the generator.
 */
import type { Command } from 'commander';
import { markdownCell } from './markdown-cell.js';
import { COMMAND_EXAMPLES, commandPath, examplesText } from '../cli/command-examples.js';
import { allCommands } from './reference-program.js';

/** Thrown when a command cannot be documented: says what to write where. */
export class UndocumentedCommandsError extends Error {}

/** The commands' problems as documentation: missing purpose, purpose over one line, too few or many examples. */
export function commandGaps(program: Command): string[] {
  const gaps: string[] = [];
  for (const command of allCommands(program)) {
    const path = commandPath(command);
    const description = command.description();
    if (!description) gaps.push(`\`${path}\` has no description (its one-line purpose)`);
    else if (description.includes('\n')) gaps.push(`\`${path}\`'s description is more than one line`);
    const count = COMMAND_EXAMPLES[path]?.length ?? 0;
    if (count < 2 || count > 3)
      gaps.push(`\`${path}\` has ${count} examples in src/cli/command-examples.ts, not two or three`);
  }
  for (const path of Object.keys(COMMAND_EXAMPLES))
    if (!allCommands(program).some((command) => commandPath(command) === path))
      gaps.push(`src/cli/command-examples.ts has examples of \`${path}\`, which is no command`);
  return gaps;
}

/** The reference as Markdown: an index, then a section per command with its usage, options and examples. */
export function commandReferenceMarkdown(program: Command): string {
  const gaps = commandGaps(program);
  if (gaps.length)
    throw new UndocumentedCommandsError(
      `Commands the reference cannot document: ${gaps.join('; ')}. Fix them, then run \`npm run docs:generate\`.`,
    );
  const commands = allCommands(program);
  const lines = ['| Command | What it does |', '|---|---|'];
  for (const command of commands)
    lines.push(
      `| [\`${fullName(command)}\`](#${slugOfCommand(command)}) | ${markdownCell(command.description())} |`,
    );
  lines.push('');
  for (const command of commands) lines.push(...section(command));
  return lines.join('\n');
}

function section(command: Command): string[] {
  const help = command.createHelp();
  const lines = [`## \`${fullName(command)}\``, '', markdownCell(command.description()), '', '```'];
  lines.push(`${fullName(command)} ${command.usage()}`.trim(), '```', '');
  const argumentsList = help.visibleArguments(command);
  if (argumentsList.length) {
    lines.push('| Argument | Meaning |', '|---|---|');
    for (const argument of argumentsList)
      lines.push(`| \`${argument.name()}\` | ${markdownCell(help.argumentDescription(argument))} |`);
    lines.push('');
  }
  const options = help.visibleOptions(command).filter((option) => option.long !== '--help');
  if (options.length) {
    lines.push('| Option | Meaning |', '|---|---|');
    for (const option of options)
      lines.push(`| \`${option.flags}\` | ${markdownCell(help.optionDescription(option))} |`);
    lines.push('');
  }
  const subcommands = help.visibleCommands(command).filter((sub) => sub.name() !== 'help');
  if (subcommands.length) {
    lines.push(
      `Commands: ${subcommands.map((sub) => `[\`${sub.name()}\`](#${slugOfCommand(sub)})`).join(', ')}.`,
      '',
    );
  }
  lines.push('```bash', examplesText(COMMAND_EXAMPLES[commandPath(command)] ?? []), '```', '');
  return lines;
}

function fullName(command: Command): string {
  return `agent-runner ${commandPath(command)}`;
}

/** GitHub's anchor of the section's heading `` `agent-runner image build` ``. */
function slugOfCommand(command: Command): string {
  return fullName(command).toLowerCase().replace(/ /g, '-');
}
