/**
 * `agent-runner memory proposals|accept|reject`: the decisions COMPLETE tasks offered the memory bank, and a
 * person's answer to each. Accepting writes an entry file like `memory add` (source `task <ID>`); nothing
 * becomes active without it. See docs/memory.md.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { readAllProposals } from '../memory/memory-proposals.js';
import { decideProposal } from '../memory/proposal-decision.js';
import { showControls } from '../notes/terminal-text.js';
import { STATE_DIR_NAME } from '../workspace/layout.js';
import { memoryPlace } from './memory-place.js';
import type { CommandContext } from './program.js';

async function proposalsCommand(options: { json?: boolean }, context: CommandContext): Promise<void> {
  const place = await memoryPlace(context);
  const read = await readAllProposals(path.join(place.root, STATE_DIR_NAME, 'runs'));
  for (const problem of read.problems) context.output.err(`agent-runner: memory: skipped ${problem}`);
  const pending = read.proposals.filter((proposal) => proposal.status === 'pending');
  if (options.json) {
    context.output.out(JSON.stringify({ proposals: pending }));
    return;
  }
  if (pending.length === 0) context.output.err('agent-runner: no pending memory proposals.');
  // Model text on a terminal: its controls shown as visible escapes, never acted on.
  for (const proposal of pending)
    context.output.out(
      [
        `${proposal.id}  ${showControls(proposal.title, 'one_line')}  (${proposal.proposedAt})`,
        ...showControls(proposal.text, 'lines')
          .split('\n')
          .map((line) => `    ${line}`),
        '',
      ].join('\n'),
    );
  if (pending.length > 0)
    context.output.err(
      'agent-runner: `memory accept ID [--commit]` makes one an entry; `memory reject ID` drops it.',
    );
}

async function decideCommand(
  status: 'accepted' | 'rejected',
  id: string,
  options: { commit?: boolean },
  context: CommandContext,
): Promise<void> {
  const place = await memoryPlace(context);
  const outcome = await decideProposal({ repoRoot: place.root, memoryDir: place.dir }, id, {
    status,
    by: 'cli',
    now: new Date(),
    ...(options.commit ? { commit: true } : {}),
  });
  if (!outcome.entry) {
    context.output.out(`${outcome.id} rejected`);
    return;
  }
  if (!outcome.commit)
    context.output.err(
      `agent-runner: review and commit ${outcome.entry}: workers read committed entries only.`,
    );
  const done = outcome.commit ? `committed ${outcome.commit.slice(0, 12)}` : 'not committed';
  context.output.out(`${outcome.id} accepted: ${outcome.entry} (${done})`);
}

/** Registers `proposals`, `accept` and `reject` under the `memory` command. */
export function registerMemoryProposalCommands(memory: Command, context: CommandContext): void {
  memory
    .command('proposals')
    .description('Pending decisions COMPLETE tasks offered the memory bank, with their ids (TASK-ID#N)')
    .option('--json', 'JSON on stdout')
    .action((options: { json?: boolean }) => proposalsCommand(options, context));
  memory
    .command('accept')
    .description('Make a proposal an active entry file (commit it, or give --commit)')
    .argument('<id>', 'its id, TASK-ID#N')
    .option('--commit', 'commit the new file (and nothing else)')
    .action((id: string, options: { commit?: boolean }) => decideCommand('accepted', id, options, context));
  memory
    .command('reject')
    .description("Drop a proposal: it stays in its task's record as rejected, no entry is written")
    .argument('<id>', 'its id, TASK-ID#N')
    .action((id: string) => decideCommand('rejected', id, {}, context));
}
