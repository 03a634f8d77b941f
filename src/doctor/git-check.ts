/**
 * The repository check: agent-runner works on a git repository that has at least one commit (the task branch
 * starts from HEAD).
 */
import { tryGit } from '../workspace/git/git-command.js';
import { failed, passed, type DoctorCheck } from './doctor-check.js';

const NAME = 'Git repository';

/** The top level of the git work tree holding `cwd`, or undefined outside one. */
export async function findGitRoot(cwd: string): Promise<string | undefined> {
  const result = await tryGit(['rev-parse', '--show-toplevel'], { cwd });
  return result.exitCode === 0 && result.stdout.trim() ? result.stdout.trim() : undefined;
}

/** Checks that `cwd` is inside a git work tree whose HEAD is a commit. */
export async function checkGitRepository(cwd: string): Promise<DoctorCheck> {
  const root = await findGitRoot(cwd);
  if (!root) {
    return failed(
      NAME,
      `${cwd} is not inside a git repository`,
      'Run agent-runner from your project repository, or create one with `git init` and a first commit.',
    );
  }
  const head = await tryGit(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: root });
  if (head.exitCode !== 0) {
    return failed(
      NAME,
      `${root} has no commit yet`,
      'Make a first commit (`git add -A && git commit -m "initial commit"`): the task branch starts from HEAD.',
    );
  }
  const branch = await tryGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: root });
  const where = branch.exitCode === 0 ? `branch ${branch.stdout.trim()}` : 'detached HEAD';
  return passed(NAME, `${root} (${where} at ${head.stdout.trim().slice(0, 12)})`);
}
