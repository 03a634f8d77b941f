/**
 * A person's decision on a memory bank proposal: accept writes it as an active entry file (the same code as
 * `memory add`, source `task <ID>`, committed only with `commit`), reject drops it; either way the proposal is
 * marked and leaves the pending list. Shared by the CLI and the server.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../errors.js';
import { STATE_DIR_NAME } from '../workspace/layout.js';
import { changeTaskProposals, parseProposalId, type MemoryProposal } from './memory-proposals.js';
import { addMemoryEntry, commitMemoryFiles } from './memory-store.js';

/** Where the memory bank and the runs of a repository are. */
export interface ProposalPlace {
  repoRoot: string;
  /** `memory.dir` from the repository's configuration. */
  memoryDir: string;
}

/** What a decision did. */
export interface ProposalOutcome {
  id: string;
  status: 'accepted' | 'rejected';
  /** The entry file an accepted proposal became (repository path). */
  entry?: string;
  /** The commit that holds it, with `commit`. */
  commit?: string;
}

/** No proposal has that id. */
export class ProposalNotFoundError extends UserError {
  constructor(id: string) {
    super(
      'usage',
      `No pending memory proposal ${id}. \`agent-runner memory proposals\` lists them (ids are TASK-ID#N).`,
    );
  }
}

/** The proposal was accepted or rejected already. */
export class ProposalDecidedError extends UserError {
  constructor(id: string, proposal: MemoryProposal) {
    super(
      'usage',
      `Memory proposal ${id} was ${proposal.status} already${proposal.entry ? ` (${proposal.entry})` : ''}.`,
    );
  }
}

function pendingOf(proposals: MemoryProposal[], id: string, number: number): MemoryProposal {
  const proposal = proposals.find((item) => item.number === number);
  if (!proposal) throw new ProposalNotFoundError(id);
  if (proposal.status !== 'pending') throw new ProposalDecidedError(id, proposal);
  return proposal;
}

/** The run directory of a proposal's task; an id that names none is an unknown proposal. */
function located(place: ProposalPlace, id: string): { runDir: string; taskId: string; number: number } {
  const parsed = parseProposalId(id);
  if (!parsed) throw new ProposalNotFoundError(id);
  return { ...parsed, runDir: path.join(place.repoRoot, STATE_DIR_NAME, 'runs', parsed.taskId) };
}

/**
 * Decides proposal `id`, under its task's lock (two people accepting the same proposal make one entry).
 * Accepting writes exactly one entry file (and commits that file only, with `commit`) before the proposal is
 * marked; an unknown or already decided id is a UserError and changes nothing.
 */
export async function decideProposal(
  place: ProposalPlace,
  id: string,
  decision: { status: 'accepted' | 'rejected'; by: string; now: Date; commit?: boolean },
): Promise<ProposalOutcome> {
  const { runDir, taskId, number } = located(place, id);
  if (!(await lstat(runDir).catch(() => null))?.isDirectory()) throw new ProposalNotFoundError(id);
  const outcome = await changeTaskProposals(runDir, taskId, async (file): Promise<ProposalOutcome> => {
    const proposal = pendingOf(file.proposals, id, number);
    const entry =
      decision.status === 'accepted'
        ? await addMemoryEntry(
            place.repoRoot,
            place.memoryDir,
            {
              title: proposal.title,
              status: 'active',
              source: `task ${taskId}`,
              created: decision.now.toISOString(),
            },
            proposal.text,
          )
        : undefined;
    proposal.status = decision.status;
    proposal.decidedAt = decision.now.toISOString();
    proposal.decidedBy = decision.by;
    if (entry) proposal.entry = entry;
    return { id, status: decision.status, ...(entry ? { entry } : {}) };
  });
  if (outcome.entry && decision.commit)
    outcome.commit = await commitMemoryFiles(
      place.repoRoot,
      [outcome.entry],
      `Memory: ${outcome.id} accepted`,
    );
  return outcome;
}
