/**
 * `agent-runner gc`: removes what dead runners left behind. Containers labelled by agent-runner whose runner
 * is gone (this repository's; `--all` for every repository on this engine). Worktrees (and sandbox
 * repositories) of finished tasks, only when nothing would be lost: no uncommitted change, no commit that is
 * on no other branch or remote (`--force` overrides; the task branch always stays). Running and stale tasks
 * are never touched; a project (a PRD split into subtasks) is a task like any other, its integration worktree
 * its worktree, and its subtasks' worktrees and sandboxes go as any task's once the project has finished. Exit 0, or 4 when Docker could not be asked.
 */
import type { Command } from 'commander';
import type { CommandContext } from './program.js';

export interface GcCommandOptions {
  all?: boolean;
  force?: boolean;
  dryRun?: boolean;
  /** A `run --repo` remote's cached clone (outside any repository: every cached one). */
  repo?: string;
}

export function registerGcCommand(program: Command, context: CommandContext): void {
  program
    .command('gc')
    .description(
      'Remove containers of dead runners and the worktrees of finished tasks that hold no unsaved work',
    )
    .option('--all', "containers of every repository on this engine, not only this one's")
    .option('--force', 'also remove worktrees with uncommitted or unpushed work (task branches always stay)')
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--repo <url>', "a `run --repo` remote's cache (outside any repository: every cached one)")
    .action(async (options: GcCommandOptions) => {
      // Imported here: the sweep's modules (journals, Docker, capped mounts) are no other command's start.
      const { gcCommand } = await import('./gc-sweep.js');
      await gcCommand(options, context);
    });
}
