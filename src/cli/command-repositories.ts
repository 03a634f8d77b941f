/**
 * Which repositories `status`, `resume`, `gc` and `serve` act on: `--repo URL` names a remote's cached clone;
 * without it the repository around the working directory, as always; and from a directory that is in no git
 * repository at all, every cached clone (a `--repo` task's person has no checkout to stand in).
 */
import { existsSync } from 'node:fs';
import { UserError } from '../errors.js';
import { existingCache, listCachedRepositories, readCachedRemote } from '../remote/repository-cache.js';
import { inspectRepository } from '../workspace/git/inspect-repository.js';
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import type { CommandContext } from './program.js';

/** A repository a command acts on; `url` is set for a remote's cached clone. */
export interface CommandRepository {
  root: string;
  url: string | null;
}

/** The repositories a command acts on (see the module's comment); never empty. */
export async function commandRepositories(
  repo: string | undefined,
  context: Pick<CommandContext, 'cwd' | 'env'>,
): Promise<CommandRepository[]> {
  if (repo !== undefined) {
    const root = await existingCache(context.env, repo);
    return [{ root, url: await readCachedRemote(root) }];
  }
  const inside = await tryGit(['rev-parse', '--git-dir'], { cwd: context.cwd });
  if (inside.exitCode !== 0) {
    const cached = await listCachedRepositories(context.env);
    if (cached.length > 0) return cached;
  }
  // Inside a repository (or nothing cached): the local rules and their messages, as before.
  const root = (await inspectRepository(context.cwd)).root;
  return [{ root, url: await readCachedRemote(root) }];
}

/** The one repository that holds task `taskId` among {@link commandRepositories}. */
export async function taskRepository(
  taskId: string,
  repo: string | undefined,
  context: Pick<CommandContext, 'cwd' | 'env'>,
): Promise<CommandRepository> {
  const candidates = await commandRepositories(repo, context);
  if (candidates.length === 1) return candidates[0] as CommandRepository;
  const holding = candidates.filter((candidate) => existsSync(taskLayout(candidate.root, taskId).runDir));
  if (holding.length === 1) return holding[0] as CommandRepository;
  if (holding.length === 0) {
    throw new UserError(
      'task_not_found',
      `No task ${taskId} in any cached repository (${candidates.map((candidate) => candidate.url).join(', ')}). See \`agent-runner status\` for the task ids.`,
    );
  }
  throw new UserError(
    'usage',
    `Task ${taskId} is in more than one cached repository (${holding.map((candidate) => candidate.url).join(', ')}). Name one with --repo URL.`,
  );
}
