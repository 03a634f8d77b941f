/**
 * The project's own instructions files (AGENTS.md, CLAUDE.md, ...) as committed at a task's base, read by the
 * host from git objects: never from the worker's workspace, never through a link. A worker CLI whose project
 * file agent-runner merges with the memory bank gets this text, not the workspace's file, so nothing a worker
 * does to that file during a run reaches a later run.
 */
import { git, splitNul, tryGit } from '../workspace/git/git-command.js';

/** The most of one project file merged into a worker's instructions file; a larger file is named, not merged. */
export const PROJECT_INSTRUCTIONS_MAX_BYTES = 32_000;

/** File name at the repository's root → its text at the commit (absent: no such regular file there). */
export type ProjectInstructions = Readonly<Record<string, string>>;

/**
 * Reads each of `names` at the root of `commit`: a regular file (mode 100644/100755) only; a link, a submodule
 * or a folder of that name is no project file. A file larger than {@link PROJECT_INSTRUCTIONS_MAX_BYTES} is
 * replaced by a line that says so.
 */
export async function readProjectInstructions(
  repoRoot: string,
  commit: string,
  names: readonly string[],
): Promise<ProjectInstructions> {
  const wanted = [...new Set(names)];
  if (wanted.length === 0) return {};
  const listed = await git(['ls-tree', '-z', '--long', '--full-tree', commit, '--', ...wanted], {
    cwd: repoRoot,
  });
  const read: Record<string, string> = {};
  for (const line of splitNul(listed)) {
    const tab = line.indexOf('\t');
    const [mode = '', type = '', sha = '', size = ''] = line.slice(0, tab).split(/ +/);
    const name = line.slice(tab + 1);
    if (!wanted.includes(name) || type !== 'blob' || (mode !== '100644' && mode !== '100755')) continue;
    if (Number(size) > PROJECT_INSTRUCTIONS_MAX_BYTES) {
      read[name] = tooLarge(name, Number(size));
      continue;
    }
    const blob = await tryGit(['cat-file', 'blob', sha], {
      cwd: repoRoot,
      maxOutputBytes: PROJECT_INSTRUCTIONS_MAX_BYTES,
    });
    read[name] = blob.exitCode === 0 ? blob.stdout : tooLarge(name, Number(size));
  }
  return read;
}

function tooLarge(name: string, size: number): string {
  return (
    `[agent-runner: the project's ${name} (${size} bytes) is larger than ${PROJECT_INSTRUCTIONS_MAX_BYTES} ` +
    `bytes and is not included here; read it in the repository.]`
  );
}
