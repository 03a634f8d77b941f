/**
 * Every command's `--help` as a person runs it: its one-line purpose, its options and its examples, in the
 * same words and order as its section of docs/commands.md.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMAND_EXAMPLES, commandPath, examplesText } from '../../src/cli/command-examples.js';
import { allCommands, referenceProgram } from '../../src/docs/reference-program.js';
import { runCliCaptured } from '../support/cli.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const reference = readFileSync(path.join(root, 'docs/commands.md'), 'utf8');
const words = (text: string) => text.replace(/\s+/g, ' ').trim();
const paths = allCommands(referenceProgram()).map(commandPath);

/** The section of docs/commands.md about `agent-runner <path>`. */
function section(commandPathText: string): string {
  const start = reference.indexOf(`## \`agent-runner ${commandPathText}\`\n`);
  expect(start, `docs/commands.md has a section for ${commandPathText}`).toBeGreaterThan(0);
  const next = reference.indexOf('\n## ', start + 1);
  return reference.slice(start, next < 0 ? undefined : next);
}

describe('--help of every command', () => {
  it('covers every command the program has', () => {
    expect(paths).toEqual(expect.arrayContaining(['run', 'resume', 'verify', 'serve', 'image build']));
    expect(paths.length).toBeGreaterThanOrEqual(21);
  });

  it.each(paths)('%s: purpose, options and examples, as in docs/commands.md', async (commandPathText) => {
    const command = allCommands(referenceProgram()).find((each) => commandPath(each) === commandPathText)!;
    const result = await runCliCaptured([...commandPathText.split(' '), '--help']);
    expect(result.exitCode).toBe(0);
    const help = result.stdout;
    const examples = COMMAND_EXAMPLES[commandPathText] ?? [];
    expect(examples.length).toBeGreaterThanOrEqual(2);
    // The examples close the help, each as "# what it does" then the command line.
    const block = `Examples:\n${examplesText(examples)
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n')}\n`;
    expect(help.endsWith(block)).toBe(true);
    expect(section(commandPathText)).toContain(`\`\`\`bash\n${examplesText(examples)}\n\`\`\``);
    // The purpose and every option, in the help and on the page, in the same order.
    expect(words(help)).toContain(words(command.description()));
    let helpAt = -1;
    let pageAt = -1;
    for (const option of command.options.filter((each) => each.long !== '--help')) {
      const inHelp = words(help).indexOf(words(`${option.flags} ${option.description}`));
      const onPage = section(commandPathText).indexOf(`| \`${option.flags}\` |`);
      expect(inHelp, `${option.flags} in the help`).toBeGreaterThan(helpAt);
      expect(onPage, `${option.flags} on the page`).toBeGreaterThan(pageAt);
      helpAt = inHelp;
      pageAt = onPage;
    }
  });
});
