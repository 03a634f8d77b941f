/**
 * What lets one sandbox serve many combined checks without one check's code steering the next (the
 * integration sandbox, src/parallel/integration-sandbox.ts). Between two checks the sandbox is brought back to
 * what a fresh sandbox on the new head would be:
 *
 * - **set-up outputs sealed**: right after the set-up (on a tree no worker touched), the keeper's uid records
 *   every path the set-up left that git does not track (`node_modules/`, `.venv/`...), with type, mode, size,
 *   link target and the SHA-256 of every file, in {@link SETUP_MANIFEST_DIR} (the keeper's, in the sticky
 *   `/tmp`: the worker's uid can neither write nor replace it);
 * - **tree replaced**: the worker's uid (no process of it left running, no startup file read) moves the set-up
 *   outputs aside, removes everything else in `/workspace` (`.git` included), copies in the new head's sandbox
 *   repository that the host made in a directory mounted read-only, puts the set-up outputs back, and removes
 *   what its uid left in `/tmp` and `/dev/shm` (earlier checks' homes, tool caches such as jest's);
 * - **set-up outputs verified**: the keeper lists them again; a path the set-up made that is gone, or any
 *   change of type, mode, size, link or content, means the sandbox is not used again (a fresh one is made on
 *   the head). Paths a check only added (a tool's cache under `node_modules/.vite`) are removed, then the whole
 *   listing must equal the sealed one byte for byte.
 *
 * Every script is fixed text; paths come as arguments (NUL-safe), never spliced into shell text. Nothing here is
 * read by the host but exit codes and short messages.
 */
import type { ExecResult, SandboxRuntime } from '../core/ports.js';
import { SANDBOX_WORKDIR } from '../workspace/layout.js';
import { BASH_WITHOUT_STARTUP_FILES } from './no-startup-files.js';
import { showControls } from '../notes/terminal-text.js';

/** The sealed listing of the set-up's outputs: the keeper's, read-only to the worker. */
export const SETUP_MANIFEST_DIR = '/tmp/agent-runner-setup-manifest';

/** Where the host's sandbox repositories for the next heads are mounted, read-only. */
export const CHECK_INBOX_DIR = '/agent-runner-inbox';

// Every path under the roots (never following a link, the roots included), sorted; then the listing: one line
// per entry with its type and mode (and size, link target), one per file with its SHA-256. A file that cannot
// be read, a directory that cannot be listed: the listing fails.
const LISTING_FUNCTIONS = [
  'set -u -o pipefail',
  `m=${SETUP_MANIFEST_DIR}`,
  'export LC_ALL=C',
  'paths() { find -P "$@" -print0 2>/dev/null | sort -z; }',
  'listing() {',
  '  { find -P "$@" ! -type f -printf "%y %m %l -> %p\\0" &&',
  '    find -P "$@" -type f -printf "f %m %s %p\\0" &&',
  '    find -P "$@" -type f -print0 | xargs -0 -r sha256sum -z -- ; } | sort -z',
  '}',
  `cd ${SANDBOX_WORKDIR} || exit 3`,
].join('\n');

const SEAL_SCRIPT = [
  LISTING_FUNCTIONS,
  // Sealed once per sandbox; anything already there is not the keeper's to trust.
  '[ -e "$m" ] || [ -L "$m" ] && exit 3',
  'mkdir -m 0755 "$m" || exit 3',
  'paths "$@" > "$m/paths" || exit 4',
  'listing "$@" > "$m/listing" || exit 4',
  'chmod a-w "$m/paths" "$m/listing"',
  'tr -cd "\\0" < "$m/paths" | wc -c',
].join('\n');

// The paths the set-up made that are gone (the first named, exit 4), and the ones added since, for removal.
const EXTRAS_SCRIPT = [
  LISTING_FUNCTIONS,
  '[ -d "$m" ] && [ ! -L "$m" ] && [ -O "$m" ] || exit 3',
  'rm -f "$m/now" "$m/extras"',
  'paths "$@" > "$m/now"',
  'missing=$(comm -z -23 "$m/paths" "$m/now" | head -z -n 1 | tr "\\0" "\\n")',
  '[ -n "$missing" ] && { printf "%s is gone or changed" "$missing"; exit 4; }',
  'comm -z -13 "$m/paths" "$m/now" > "$m/extras" || exit 4',
  'tr -cd "\\0" < "$m/extras" | wc -c',
].join('\n');

const VERIFY_SCRIPT = [
  LISTING_FUNCTIONS,
  '[ -d "$m" ] && [ ! -L "$m" ] && [ -O "$m" ] || exit 3',
  'rm -f "$m/now"',
  'listing "$@" > "$m/now" || { echo "a set-up output could not be read"; exit 4; }',
  'cmp -s "$m/listing" "$m/now" && exit 0',
  'first=$(comm -z -13 "$m/listing" "$m/now" | head -z -n 1 | tr "\\0" "\\n")',
  'printf "%s" "${first:-a set-up output is gone}"',
  'exit 4',
].join('\n');

// The worker's uid: removes what a check added under the set-up outputs (listed by the keeper, all reached
// without following a link and nothing has run since).
const REMOVE_EXTRAS_SCRIPT = [
  `cd ${SANDBOX_WORKDIR} || exit 3`,
  `xargs -0 -r rm -rf -- < ${SETUP_MANIFEST_DIR}/extras`,
].join('\n');

// The worker's uid, with no process of it running: $1 the new head's repository (read-only mount), $2 the name
// of the holding directory, then the set-up's outputs. A root whose parent is not the real directory it names
// (a link on the way) is not moved, and so not kept: the verification then finds it gone.
const UPDATE_SCRIPT = [
  'set -eu',
  'src=$1 name=$2',
  'shift 2',
  `ws=${SANDBOX_WORKDIR}`,
  'hold="$ws/$name"',
  'real() { [ -d "$ws/$1" ] && [ "$(cd -P -- "$ws/$1" && pwd -P)" = "$ws${1:+/}$1" ]; }',
  'parent() { case "$1" in */*) printf "%s" "${1%/*}" ;; *) printf "" ;; esac; }',
  'cd "$ws"',
  '[ -d "$src/.git" ] || exit 10',
  '[ ! -e "$src/$name" ] && [ ! -L "$src/$name" ] || exit 11',
  'rm -rf -- "$hold"',
  'mkdir -- "$hold"',
  'i=0',
  'for root in "$@"; do',
  '  if real "$(parent "$root")" && { [ -e "$root" ] || [ -L "$root" ]; }; then',
  '    mkdir -- "$hold/$i"',
  '    mv -- "$root" "$hold/$i/kept"',
  '  fi',
  '  i=$((i + 1))',
  'done',
  'find "$ws" -mindepth 1 -maxdepth 1 ! -name "$name" -exec rm -rf -- {} +',
  'cp -dR --preserve=mode,timestamps,links -- "$src/." "$ws/"',
  'i=0',
  'for root in "$@"; do',
  '  if { [ -e "$hold/$i/kept" ] || [ -L "$hold/$i/kept" ]; } && real "$(parent "$root")" && [ ! -e "$root" ] && [ ! -L "$root" ]; then',
  '    mv -- "$hold/$i/kept" "$root"',
  '  fi',
  '  i=$((i + 1))',
  'done',
  'rm -rf -- "$hold"',
  // What this uid left in the shared temporary directories: earlier checks' homes, tools' caches.
  'find /tmp /dev/shm -mindepth 1 -maxdepth 1 -user "$(id -u)" -exec rm -rf -- {} + 2>/dev/null || true',
].join('\n');

/** Why the sandbox cannot be used again, or null when it can. */
export type ReuseRefusal = string | null;

interface ScriptRun {
  runtime: SandboxRuntime;
  sandboxId: string;
  /** The keeper's `uid:gid` (scripts that record or read the seal). */
  keeper: string;
  signal?: AbortSignal;
}

function run(
  options: ScriptRun,
  script: string,
  args: readonly string[],
  as: 'keeper' | 'worker',
): Promise<ExecResult> {
  return options.runtime.exec(
    options.sandboxId,
    [...BASH_WITHOUT_STARTUP_FILES, script, 'agent-runner-setup-outputs', ...args],
    {
      workdir: '/',
      ...(as === 'keeper' ? { user: options.keeper } : {}),
      timeoutMs: 10 * 60_000,
      graceMs: 2_000,
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
}

/** One line of what a script said (worker-named paths included): no control characters, bounded. */
function said(result: ExecResult, otherwise: string): string {
  const text = result.stdoutTail.trim() || result.stderrTail.split('\n').filter(Boolean).at(-1) || '';
  return showControls(text.trim() || otherwise, 'one_line').slice(0, 200);
}

/** Seals the set-up's outputs (`roots`, relative to /workspace); returns how many paths, or why not. */
export async function sealSetupOutputs(
  options: ScriptRun,
  roots: readonly string[],
): Promise<{ paths: number } | { refused: string }> {
  const result = await run(options, SEAL_SCRIPT, roots, 'keeper');
  const paths = Number(result.stdoutTail.trim());
  return result.exitCode === 0 && Number.isInteger(paths)
    ? { paths }
    : { refused: `the set-up's outputs could not be sealed (exit ${result.exitCode})` };
}

/**
 * Replaces the sandbox's tree with the repository at `source` (inside the container, read-only), keeping the
 * set-up's outputs, then verifies them against the seal. Run only after the worker's processes were swept.
 */
export async function replaceCheckTree(
  options: ScriptRun & { source: string; holdName: string; roots: readonly string[] },
): Promise<ReuseRefusal> {
  const { roots } = options;
  const update = await run(options, UPDATE_SCRIPT, [options.source, options.holdName, ...roots], 'worker');
  if (update.exitCode !== 0)
    return `the tree could not be replaced in place (exit ${update.exitCode}): ${said(update, 'no message')}`;
  if (roots.length === 0) return null;
  const extras = await run(options, EXTRAS_SCRIPT, roots, 'keeper');
  if (extras.exitCode !== 0) return `set-up output ${said(extras, `check failed (exit ${extras.exitCode})`)}`;
  if (Number(extras.stdoutTail.trim()) > 0) {
    const removed = await run(options, REMOVE_EXTRAS_SCRIPT, [], 'worker');
    if (removed.exitCode !== 0) return `files a check added to the set-up's outputs could not be removed`;
  }
  const verified = await run(options, VERIFY_SCRIPT, roots, 'keeper');
  return verified.exitCode === 0
    ? null
    : `set-up output changed since the set-up: ${said(verified, `exit ${verified.exitCode}`)}`;
}
