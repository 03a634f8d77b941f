/**
 * The integration branch `agent-runner/<ID>` of a project and its host worktree
 * (`.agent-runner/worktrees/<ID>`): subtask branches are merged there with real `git merge`, never in the
 * person's checkout. The merged content was written by workers (attacker data): like every host git call
 * (git-command.ts) it runs no hook, filter, merge or diff driver, whoever configured it, and here without the
 * person's global and system config as well.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { UserError } from '../errors.js';
import { git, splitNul, tryGit, type GitCommandOptions } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';
import { resolveCommit } from '../workspace/git/tree-entries.js';
import type { CombinedCheck } from './project-events.js';
import type { FileChange, IntegrationPort, MergeResult, SubtaskCriteria } from './ports.js';

/** The diff handed to the review is cut to this many characters. */
export const REVIEW_DIFF_CHARS = 16_000;

const SAFE_ENV = { GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
const SAFE_CONFIG = {
  'user.name': 'agent-runner',
  'user.email': 'agent-runner@localhost',
  'commit.gpgSign': 'false',
  'merge.renames': 'true',
};

export interface IntegrationBranchOptions {
  repoRoot: string;
  taskId: string;
  /** The commit the integration branch starts at when it does not exist yet. */
  baseSha: string;
  /** Runs the combined check (DoD, then the subtasks' criteria) on a commit of the integration branch. */
  runCheck(
    headSha: string,
    label: string,
    criteria: readonly SubtaskCriteria[],
    signal?: AbortSignal,
  ): Promise<CombinedCheck>;
}

export class GitIntegrationBranch implements IntegrationPort {
  readonly branch: string;
  private readonly branchRef: string;
  private readonly worktree: string;

  private constructor(private readonly options: IntegrationBranchOptions) {
    const layout = taskLayout(options.repoRoot, options.taskId);
    this.branch = layout.branch;
    this.branchRef = layout.branchRef;
    this.worktree = layout.worktreePath;
  }

  /** Creates the branch at the base (or reuses it, on resume) and its host worktree. */
  static async open(options: IntegrationBranchOptions): Promise<GitIntegrationBranch> {
    const integration = new GitIntegrationBranch(options);
    const cwd = options.repoRoot;
    if ((await resolveCommit(cwd, integration.branchRef)) === null)
      await git(['branch', '--no-track', integration.branch, options.baseSha], { cwd });
    if (!existsSync(integration.worktree)) {
      await git(['worktree', 'prune'], { cwd });
      const added = await tryGit(['worktree', 'add', '-q', integration.worktree, integration.branch], {
        cwd,
      });
      if (added.exitCode !== 0)
        throw new UserError(
          'repository_invalid',
          `Could not create the worktree ${integration.worktree} for ${integration.branch}: ${added.stderr.trim()}. ` +
            'If the branch is checked out elsewhere, switch that checkout to another branch and run again.',
        );
    }
    return integration;
  }

  private inWorktree(): GitCommandOptions {
    return { cwd: this.worktree, env: SAFE_ENV, config: SAFE_CONFIG };
  }

  async head(): Promise<string> {
    return (await git(['rev-parse', this.branchRef], { cwd: this.options.repoRoot })).trim();
  }

  async baseFiles(): Promise<string[]> {
    const output = await git(['ls-tree', '-r', '--name-only', '-z', this.options.baseSha], {
      cwd: this.options.repoRoot,
    });
    return splitNul(output);
  }

  async merge(branch: string, message: string): Promise<MergeResult> {
    const merged = await tryGit(['merge', '--no-ff', '--no-edit', '-m', message, branch], this.inWorktree());
    if (merged.exitCode === 0) return { status: 'merged', sha: await this.head() };
    const conflicted = await tryGit(['diff', '--name-only', '-z', '--diff-filter=U'], this.inWorktree());
    const files = splitNul(conflicted.stdout);
    await tryGit(['merge', '--abort'], this.inWorktree());
    // A merge that failed before touching anything (an unknown branch) is not a conflict of files.
    if (files.length === 0 && !/conflict/i.test(merged.stdout + merged.stderr))
      throw new Error(`git merge ${branch} failed: ${(merged.stderr || merged.stdout).trim()}`);
    return { status: 'conflict', files, sha: await this.head() };
  }

  async resetTo(sha: string): Promise<void> {
    await git(['reset', '-q', '--hard', sha], this.inWorktree());
  }

  async diff(base: string, branch: string): Promise<string> {
    // Deletions first: what a branch took away is what a review most easily misses at the end of a long diff.
    const part = async (filter: string) =>
      (
        await tryGit(['diff', '--no-color', `--diff-filter=${filter}`, `${base}...${branch}`], {
          cwd: this.options.repoRoot,
          env: SAFE_ENV,
        })
      ).stdout;
    const diff = (await part('D')) + (await part('d'));
    return diff.length > REVIEW_DIFF_CHARS
      ? `${diff.slice(0, REVIEW_DIFF_CHARS)}\n[diff cut at ${REVIEW_DIFF_CHARS} characters]`
      : diff;
  }

  async changes(base: string, branch: string): Promise<FileChange[]> {
    const result = await tryGit(['diff', '--name-status', '-z', '-M', `${base}...${branch}`], {
      cwd: this.options.repoRoot,
      env: SAFE_ENV,
    });
    const fields = splitNul(result.stdout);
    const changes: FileChange[] = [];
    for (let index = 0; index < fields.length;) {
      const status = fields[index++] ?? '';
      if (/^[RC]/.test(status)) {
        const from = fields[index++] ?? '';
        changes.push({ status: status[0]!, path: fields[index++] ?? '', from });
      } else changes.push({ status: status.slice(0, 1), path: fields[index++] ?? '' });
    }
    return changes;
  }

  async combinedCheck(
    label: string,
    criteria: readonly SubtaskCriteria[],
    signal?: AbortSignal,
  ): Promise<CombinedCheck> {
    return this.options.runCheck(await this.head(), label, criteria, signal);
  }

  /** The host worktree, for the note. */
  get worktreePath(): string {
    return path.resolve(this.worktree);
  }
}
