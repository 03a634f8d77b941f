/**
 * Memory bank proposals: the decisions a COMPLETE task's assessment named, kept in the task's run directory
 * (`.agent-runner/runs/<ID>/memory-proposals.json`) until a person accepts one (it becomes an entry file) or
 * rejects it. Nothing here makes an entry: a proposal is data the model wrote, shown inert, never read by a run.
 */
import { mkdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import writeFileAtomic from 'write-file-atomic';
import * as z from 'zod';
import { isValidTaskId } from '../core/task-id.js';
import { decisionSchema, type Decision } from '../protocol/messages.js';
import { readRegularFile } from './memory-store.js';

/** The file of a task's proposals, in its run directory. */
export const PROPOSALS_FILE = 'memory-proposals.json';
/** A task keeps at most this many proposals over all its follow-ups (each assessment names at most 5). */
export const MAX_TASK_PROPOSALS = 50;
const MAX_PROPOSALS_FILE_BYTES = 512 * 1024;

export const PROPOSAL_STATUSES = ['pending', 'accepted', 'rejected'] as const;
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];

/** One proposal as its task's file keeps it. */
export const memoryProposalSchema = decisionSchema.extend({
  /** Its number within the task, from 1, never reused: `<TASK-ID>#<number>` names it. */
  number: z.number().int().positive(),
  status: z.enum(PROPOSAL_STATUSES),
  proposedAt: z.string(),
  decidedAt: z.string().optional(),
  /** Who decided: the server's identity name, or `cli`. */
  decidedBy: z.string().optional(),
  /** The entry file an accepted proposal became. */
  entry: z.string().optional(),
});
export type MemoryProposal = z.infer<typeof memoryProposalSchema>;

const proposalsFileSchema = z.object({
  version: z.literal(1),
  taskId: z.string(),
  proposals: z.array(memoryProposalSchema).max(MAX_TASK_PROPOSALS),
});
type ProposalsFile = z.infer<typeof proposalsFileSchema>;

/** A proposal with the task it came from and its stable id `<TASK-ID>#<number>`. */
export interface ListedProposal extends MemoryProposal {
  id: string;
  taskId: string;
}

/** The id of a task's proposal. */
export function proposalId(taskId: string, number: number): string {
  return `${taskId}#${number}`;
}

/** `<TASK-ID>#<number>` split, or null when it is not one. */
export function parseProposalId(id: string): { taskId: string; number: number } | null {
  const match = /^(.+)#([1-9]\d{0,5})$/.exec(id.trim());
  if (!match || !isValidTaskId(match[1] ?? '')) return null;
  return { taskId: match[1] ?? '', number: Number(match[2]) };
}

/**
 * The decisions a finished task offers (pure): those of its last assessment, and only when it ended COMPLETE.
 * The worker's text never becomes one: only the Meta-agent's assessment names decisions.
 */
export function decisionsOffered(record: {
  state: string;
  runs: readonly { assessment?: { decisions?: Decision[] } }[];
}): Decision[] {
  if (record.state !== 'COMPLETE') return [];
  return [...record.runs].reverse().find((run) => run.assessment)?.assessment?.decisions ?? [];
}

function fileOf(runDir: string): string {
  return path.join(runDir, PROPOSALS_FILE);
}

async function readTaskFile(runDir: string): Promise<ProposalsFile | null> {
  let text: string;
  try {
    text = await readRegularFile(fileOf(runDir), MAX_PROPOSALS_FILE_BYTES);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const parsed = proposalsFileSchema.safeParse(JSON.parse(text));
  if (!parsed.success)
    throw new Error(
      `${fileOf(runDir)}: ${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`,
    );
  return parsed.data;
}

/** Runs `change` on a task's proposals file under its lock and writes the result atomically. */
export async function changeTaskProposals<T>(
  runDir: string,
  taskId: string,
  change: (file: ProposalsFile) => T | Promise<T>,
): Promise<T> {
  mkdirSync(runDir, { recursive: true });
  const release = await lockfile.lock(runDir, {
    lockfilePath: `${fileOf(runDir)}.lock`,
    retries: { retries: 20, minTimeout: 50, maxTimeout: 500 },
    stale: 10_000,
  });
  try {
    const file = (await readTaskFile(runDir)) ?? { version: 1 as const, taskId, proposals: [] };
    const result = await change(file);
    await writeFileAtomic(fileOf(runDir), `${JSON.stringify(file, null, 2)}\n`);
    return result;
  } finally {
    await release();
  }
}

/**
 * Adds a finished task's decisions to its proposals as pending (a follow-up's are added after the earlier
 * ones; one already proposed with the same title and text is not proposed again). `redact` runs on every text
 * first. Returns the ids added.
 */
export async function recordProposals(
  runDir: string,
  taskId: string,
  decisions: readonly Decision[],
  options: { now: Date; redact?: (text: string) => string },
): Promise<string[]> {
  if (decisions.length === 0) return [];
  const redact = options.redact ?? ((text: string) => text);
  return changeTaskProposals(runDir, taskId, (file) => {
    const added: string[] = [];
    for (const decision of decisions) {
      const title = redact(decision.title);
      const text = redact(decision.text);
      const known = file.proposals.some((item) => item.title === title && item.text === text);
      if (known || file.proposals.length >= MAX_TASK_PROPOSALS) continue;
      const number = Math.max(0, ...file.proposals.map((item) => item.number)) + 1;
      file.proposals.push({ number, title, text, status: 'pending', proposedAt: options.now.toISOString() });
      added.push(proposalId(taskId, number));
    }
    return added;
  });
}

/** Every proposal of every task under `runsDir` (oldest task first), and the files that could not be read. */
export async function readAllProposals(
  runsDir: string,
): Promise<{ proposals: ListedProposal[]; problems: string[] }> {
  const names = await readdir(runsDir).catch(() => [] as string[]);
  const proposals: ListedProposal[] = [];
  const problems: string[] = [];
  for (const taskId of names.sort()) {
    if (!isValidTaskId(taskId)) continue;
    let file: ProposalsFile | null;
    try {
      file = await readTaskFile(path.join(runsDir, taskId));
    } catch (error) {
      problems.push(error instanceof Error ? error.message : String(error));
      continue;
    }
    for (const proposal of file?.proposals ?? [])
      proposals.push({ ...proposal, id: proposalId(taskId, proposal.number), taskId });
  }
  return { proposals, problems };
}
