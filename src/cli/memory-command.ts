/**
 * `agent-runner memory add|list|show|archive|preview` (and, from memory-proposal-commands.ts, `proposals|accept|reject`): the memory bank's entries, files in the repository that
 * the person reviews and commits (or commits with `--commit`: those files only). See docs/memory.md.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { workerHomeInSandbox } from '../compose/task-worker.js';
import { UserError } from '../errors.js';
import { MEMORY_STATUSES, type MemoryBankEntry, type MemoryStatus } from '../memory/memory-entry.js';
import {
  addMemoryEntry,
  commitMemoryFiles,
  findEntry,
  MERGED_PROJECT_FILES,
  readMemoryAtCommit,
  readMemoryDir,
  setMemoryStatus,
} from '../memory/memory-store.js';
import { memoryBankView } from '../memory/memory-view.js';
import { readProjectInstructions } from '../memory/project-instructions.js';
import { instructionsFilePath } from '../worker/instructions-file.js';
import { WORKER_KINDS, WORKER_TYPES, type WorkerType } from '../worker/worker-kinds.js';
import { memoryPlace, type MemoryPlace } from './memory-place.js';
import { registerMemoryProposalCommands } from './memory-proposal-commands.js';
import type { CommandContext } from './program.js';

async function entriesOf(place: MemoryPlace, context: CommandContext): Promise<MemoryBankEntry[]> {
  const read = await readMemoryDir(place.root, place.dir);
  for (const problem of read.problems) context.output.err(`agent-runner: memory: skipped ${problem}`);
  return read.entries;
}

async function entryById(place: MemoryPlace, id: string, context: CommandContext): Promise<MemoryBankEntry> {
  const entry = findEntry(await entriesOf(place, context), id);
  if (!entry)
    throw new UserError(
      'usage',
      `No memory entry ${id} in ${place.dir}. \`agent-runner memory list\` shows the ids.`,
    );
  return entry;
}

function committed(
  place: MemoryPlace,
  files: string[],
  message: string,
  context: CommandContext,
  commit?: boolean,
) {
  if (commit)
    return commitMemoryFiles(place.root, files, message).then((sha) => `committed ${sha.slice(0, 12)}`);
  context.output.err(
    `agent-runner: review and commit ${files.join(', ')}: workers read committed entries only.`,
  );
  return Promise.resolve('not committed');
}

async function addCommand(
  title: string,
  options: { text?: string; file?: string; commit?: boolean },
  context: CommandContext,
): Promise<void> {
  if ((options.text === undefined) === (options.file === undefined))
    throw new UserError('usage', 'Give the entry\'s text with exactly one of --text "…" or --file FILE.');
  const body =
    options.text ??
    (await readFile(path.resolve(context.cwd, options.file ?? ''), 'utf8').catch((error: Error) => {
      throw new UserError('usage', `--file ${options.file}: ${error.message}`);
    }));
  if (title.trim() === '' || body.trim() === '')
    throw new UserError('usage', 'A memory entry needs a title and a text that are not empty.');
  if (title.trim().length > 200)
    throw new UserError('usage', "A memory entry's title is at most 200 characters.");
  const place = await memoryPlace(context);
  const front = {
    title: title.trim(),
    status: 'active' as const,
    source: 'person',
    created: new Date().toISOString(),
  };
  const file = await addMemoryEntry(place.root, place.dir, front, body);
  const done = await committed(place, [file], `Memory: ${front.title}`, context, options.commit);
  context.output.out(`${file} (${done})`);
}

async function listCommand(
  options: { status?: string; json?: boolean },
  context: CommandContext,
): Promise<void> {
  if (options.status !== undefined && !MEMORY_STATUSES.includes(options.status as MemoryStatus))
    throw new UserError('usage', `--status ${options.status}: give one of ${MEMORY_STATUSES.join(', ')}.`);
  const place = await memoryPlace(context);
  const entries = (await entriesOf(place, context)).filter(
    (entry) => options.status === undefined || entry.status === options.status,
  );
  if (options.json) {
    context.output.out(JSON.stringify({ dir: place.dir, entries }));
    return;
  }
  if (entries.length === 0) context.output.err(`agent-runner: no memory entries in ${place.dir}.`);
  for (const entry of entries)
    context.output.out(
      `${entry.id}  ${entry.status.padEnd(8)}  ${entry.title}  (${entry.source}, ${entry.created})`,
    );
}

async function showCommand(id: string, context: CommandContext): Promise<void> {
  const place = await memoryPlace(context);
  const entry = await entryById(place, id, context);
  context.output.out(
    [
      `${entry.title}`,
      `${entry.file} · ${entry.status} · ${entry.source} · ${entry.created}`,
      '',
      entry.body,
    ].join('\n'),
  );
}

async function archiveCommand(
  id: string,
  options: { commit?: boolean },
  context: CommandContext,
): Promise<void> {
  const place = await memoryPlace(context);
  const entry = await entryById(place, id, context);
  if (entry.status === 'archived')
    throw new UserError('usage', `Memory entry ${entry.id} is archived already.`);
  const file = await setMemoryStatus(place.root, entry, 'archived');
  const done = await committed(place, [file], `Memory: archive ${entry.title}`, context, options.commit);
  context.output.out(`${file} archived (${done})`);
}

async function previewCommand(
  options: { worker?: string; json?: boolean },
  context: CommandContext,
): Promise<void> {
  if (options.worker !== undefined && !WORKER_TYPES.includes(options.worker as WorkerType))
    throw new UserError('usage', `--worker ${options.worker}: give one of ${WORKER_TYPES.join(', ')}.`);
  const place = await memoryPlace(context);
  const atHead = (await readMemoryAtCommit(place.root, 'HEAD', place.dir)).entries;
  const view = memoryBankView(
    atHead,
    await readProjectInstructions(place.root, 'HEAD', MERGED_PROJECT_FILES),
  );
  const committedFiles = new Set(atHead.map((entry) => entry.file));
  const uncommitted = (await readMemoryDir(place.root, place.dir)).entries
    .filter((entry) => !committedFiles.has(entry.file))
    .map((entry) => entry.file);
  const workers = options.worker ? [options.worker as WorkerType] : [...WORKER_TYPES];
  const files = workers.map((type) => ({
    worker: type,
    path: instructionsFilePath(type, workerHomeInSandbox(type)),
    text: view.workerInstructions[type],
  }));
  if (options.json) {
    context.output.out(JSON.stringify({ dir: place.dir, ...view, instructionsFiles: files, uncommitted }));
    return;
  }
  const out = context.output.out;
  out(`Memory bank ${place.dir} at HEAD: ${view.active} active, ${view.archived} archived.`);
  if (uncommitted.length > 0) out(`Not committed, so no worker reads them yet: ${uncommitted.join(', ')}`);
  out(
    `\n== The worker prompt and the Meta-agent context hold ==\n${view.section || '(nothing: no active entry)'}`,
  );
  for (const file of files) {
    const own = WORKER_KINDS[file.worker].projectFiles;
    const how =
      own === null
        ? "the entries; the CLI reads the project's own file itself, after this one"
        : `the project's ${own.names.join(own.read === 'first' ? ' or ' : ' and ')} as committed, then the ` +
          "entries; the workspace's copy is not read";
    out(`\n== ${file.worker}: ${file.path} (in the sandbox: ${how}) ==`);
    out(file.text.trimEnd() || '(no file: no active entry and no committed project file)');
  }
}

export function registerMemoryCommands(program: Command, context: CommandContext): void {
  const memory = program
    .command('memory')
    .description("The memory bank: the team's decisions as reviewed files, read by every worker run");
  memory
    .command('add')
    .description('Write a new active entry file (commit it, or give --commit)')
    .argument('<title>', "the entry's title")
    .option('--text <text>', "the entry's text (Markdown)")
    .option('--file <file>', "a file holding the entry's text")
    .option('--commit', 'commit the new file (and nothing else)')
    .action((title: string, options: { text?: string; file?: string; commit?: boolean }) =>
      addCommand(title, options, context),
    );
  memory
    .command('list')
    .description('The entries of the working tree: id, status, title, source, when')
    .option('--status <status>', `only ${MEMORY_STATUSES.join(' or ')} entries`)
    .option('--json', 'JSON on stdout')
    .action((options: { status?: string; json?: boolean }) => listCommand(options, context));
  memory
    .command('show')
    .description("An entry's title, file, status, source, date and text")
    .argument('<id>', 'its id, number or file')
    .action((id: string) => showCommand(id, context));
  memory
    .command('archive')
    .description('Mark an entry archived: kept for the record, read by no worker')
    .argument('<id>', 'its id, number or file')
    .option('--commit', 'commit the changed file (and nothing else)')
    .action((id: string, options: { commit?: boolean }) => archiveCommand(id, options, context));
  memory
    .command('preview')
    .description("Exactly what a worker run gets: the prompts' section and each CLI's instructions file")
    .option('--worker <type>', `one worker (${WORKER_TYPES.join(', ')}); default every one`)
    .option('--json', 'JSON on stdout')
    .action((options: { worker?: string; json?: boolean }) => previewCommand(options, context));
  registerMemoryProposalCommands(memory, context);
}
