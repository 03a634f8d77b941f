/**
 * What a failed command's output says, for a person: its informative error line (not npm's "A complete log
 * of this run..." nor a blank or a stack frame) and the fix where one is known. One table serves the
 * `sandbox.setup` commands and the checks (DoD and criteria), so the same missing tool or module gets the
 * same advice wherever it shows. Pure: the callers pass output whose terminal sequences are already removed
 * (src/notes/terminal-text.ts), and a hint is advice, never a fact the gate reads.
 */

/** Where the command ran: a set-up command (network by policy, may install) or a check (no network). */
export type FailurePlace = 'setup' | 'check';

/** What is known of the failed command. */
export interface FailedCommand {
  /** Its output (stderr first), terminal sequences removed. */
  output: string;
  exitCode: number | null;
  timedOut?: boolean;
  oomKilled?: boolean;
}

/** Characters of an error line kept (cut at a word, the cut said with `…`). */
export const ERROR_LINE_CHARS = 300;

/** Lines that are metadata around the message, not the cause: npm's `code`/`syscall`/log lines, frames. */
const NOISE =
  /^npm (ERR!|error)\s*(code|syscall|path|errno|dest|A complete log|Log files were not written|You can rerun|$)|complete log of this run|^at\s+\S|^\s*\^+\s*$|^[-=─⎯]{3,}|^Node\.js v\d/i;

/** Lines that carry the cause, most telling first. */
const ERROR_LINE_PATTERNS: readonly RegExp[] = [
  /command not found|: not found\b|No module named|Cannot find module|ERR_MODULE_NOT_FOUND|ModuleNotFoundError/i,
  /^npm (ERR!|error) |\b(Error|ERROR|error|fatal|FATAL|FAIL|FAILED)\b[:!\s]|^E: |Traceback|AssertionError|panicked at/,
  /No such file or directory/i,
  /\b(EACCES|EPERM|EROFS|ENOSPC|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|E403|E404|ERESOLVE)\b|failed|denied/i,
];

/**
 * `text` cut to at most `max` characters at a word boundary (a whole line is never cut mid-word), with `…`
 * saying it was cut; unchanged when it fits.
 */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max - 1);
  const space = head.search(/\s\S*$/);
  // A word longer than a third of the room (a path, a URL) is cut where the room ends.
  return `${(space > max * 0.66 ? head.slice(0, space) : head).trimEnd()}…`;
}

/** The line of `output` that best says what failed; empty when nothing stands out. */
export function firstErrorLine(output: string): string {
  const lines = output
    .split(/\r?\n|\r/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && line !== '--- stderr ---' && !NOISE.test(line));
  for (const pattern of ERROR_LINE_PATTERNS) {
    const line = lines.find((candidate) => pattern.test(candidate));
    if (line !== undefined) return cutAtWord(line, ERROR_LINE_CHARS);
  }
  return cutAtWord(lines.at(-1) ?? '', ERROR_LINE_CHARS);
}

const TOOLCHAIN =
  'add its toolchain to the worker image with sandbox.dockerfile (e.g. `RUN apt-get install -y <package>`) or ' +
  "sandbox.baseImage, or install it with sandbox.setup (agent-runner's docs/toolchains.md)";

const PYTHON_VENV =
  'create a virtual environment in sandbox.setup, e.g. `python3 -m venv .venv && .venv/bin/pip install -r ' +
  'requirements.txt` (with `.venv/` in .gitignore), and run the checks with `.venv/bin/python -m pytest`';

/** The program a shell could not find: `bash: line 1: pytest: command not found` gives `pytest`. */
function missingCommand(output: string): string | null {
  const found = /(?:^|\s)([\w.+-]{1,60}): (?:command )?not found\b/im.exec(output);
  return found?.[1] ?? null;
}

/** A hint for a missing tool or module, the same for set-up and checks; null when none applies. */
function missingHint(output: string, exitCode: number | null): string | null {
  if (/No module named pip\b/.test(output))
    return (
      'This Python has no pip: install `python3-pip python3-venv` in sandbox.dockerfile (or use a base image ' +
      `with pip, e.g. python:3.12-bookworm), then ${PYTHON_VENV}.`
    );
  if (/externally-managed-environment/.test(output))
    return `Debian's Python refuses \`pip install\` outside a virtual environment: ${PYTHON_VENV}.`;
  const pythonModule =
    /ModuleNotFoundError: No module named '([^']{1,100})'|No module named ([\w.]{1,100})/.exec(output);
  if (pythonModule)
    return (
      `The Python module \`${pythonModule[1] ?? pythonModule[2]}\` is not installed in the sandbox: ${PYTHON_VENV} ` +
      '(`.venv/bin/pip install -e .` installs the project itself); or add the Debian package (python3-<name>) in ' +
      'sandbox.dockerfile.'
    );
  const nodeModule = /Cannot find (?:module|package) '([^']{1,200})'/.exec(output);
  if (nodeModule || /ERR_MODULE_NOT_FOUND/.test(output))
    return (
      `A Node module${nodeModule ? ` (\`${nodeModule[1]}\`)` : ''} is missing: install the dependencies in ` +
      'sandbox.setup (`npm ci`, `pnpm install --frozen-lockfile`), and check that the package is in package.json ' +
      '(a relative path: that the file exists and is committed).'
    );
  const command = missingCommand(output);
  if (command === 'yarn' || command === 'pnpm')
    return (
      `\`${command}\` is not in the sandbox: agent-runner installs it through corepack (sandbox.toolchain: auto) ` +
      `for a ${command === 'yarn' ? 'yarn.lock' : 'pnpm-lock.yaml'} at the root, or for ` +
      `\`"packageManager": "${command === 'yarn' ? 'yarn@1.22.22' : 'pnpm@9.15.9'}"\` in package.json` +
      ' (agent-runner\'s docs/toolchains.md, "Zero configuration"); with sandbox.dockerfile, install it in that image (`RUN corepack enable`).'
    );
  if (exitCode === 127 || command !== null)
    return `${command ? `\`${command}\` is` : 'A command is'} not installed in the sandbox: ${TOOLCHAIN}.`;
  return null;
}

/** What to try after a set-up command or a check failed; null for a check when nothing is known. */
export function failureHint(failed: FailedCommand, place: FailurePlace): string | null {
  const { output } = failed;
  if (failed.timedOut)
    return place === 'setup'
      ? 'Raise sandbox.setupTimeout, or make the command faster (a lockfile, a cache).'
      : "Raise the check's timeout (dod.checks[].timeout), or make it faster.";
  if (failed.oomKilled) return 'The command ran out of memory: raise sandbox.memory.';
  const missing = missingHint(output, failed.exitCode);
  if (missing !== null) return missing;
  if (/\b(EACCES|EPERM|EROFS)\b|permission denied|read-only file system/i.test(output))
    return (
      'The command wrote where the worker may not: only the workspace, $HOME and /tmp are writable in the ' +
      'sandbox. Point the tool at one of them (for example a cache under $HOME) with sandbox.env.'
    );
  if (place === 'check') return null;
  if (
    /not in sandbox\.allowlist|allows no connection|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|E403\b|403 Forbidden/i.test(
      output,
    )
  )
    return (
      'The network refused a host: add it to sandbox.allowlist (set-up uses the allowlist of your package ' +
      'registries), or set sandbox.setupNetwork: open.'
    );
  return 'Run the same command in a fresh clone of your repository to reproduce it; the full output is in the run directory.';
}
