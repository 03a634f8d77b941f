/** A task branch's changes since the task's base, as text (`git diff base...branch`). */
import { tryGit } from '../workspace/git/git-command.js';
import { taskLayout } from '../workspace/layout.js';

/** The diff; null when the task's base or branch is not there (it ended before it had any). */
export async function taskDiff(repoRoot: string, taskId: string, baseSha: string | null | undefined) {
  if (!baseSha) return null;
  const result = await tryGit(
    [
      'diff',
      '--no-color',
      '--no-ext-diff',
      '--no-textconv',
      `${baseSha}...${taskLayout(repoRoot, taskId).branchRef}`,
      '--',
    ],
    { cwd: repoRoot },
  );
  return result.exitCode === 0 ? result.stdout : null;
}
