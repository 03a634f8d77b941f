/**
 * Caches that make repeated checks fast without trusting the worker. A check runs the worker's code as the
 * worker's uid, so a cache a check can write is one the worker's code can poison (Go caches test results by
 * their inputs: a test at one commit could plant an entry that makes the next commit's `go test` print
 * "ok (cached)"). So the caches are filled only by code the worker never touched, then sealed:
 *
 * - **warm**: the baseline (the DoD on the base tree, before any worker run) runs with `XDG_CACHE_HOME` in
 *   {@link WARM_CACHE_DIR} (Go's build cache, pip's and any tool's that follows XDG);
 * - **seal**: right after it, still before any worker run, the keeper's uid copies that directory and the Go
 *   module cache the set-up commands filled (`$HOME/go/pkg/mod`) into {@link SEALED_CACHE_DIR}, owned by the
 *   keeper and read-only: the worker can neither write nor replace it (`/tmp` is sticky);
 * - **use**: every later check starts from its own copy of the sealed XDG cache in its fresh HOME (its writes die
 *   with it), and reads the sealed Go module cache in place (read-only, as Go keeps it anyway). A sealed
 *   directory the check's uid owns or can write is not used (something else made it).
 *
 * Without a baseline (`dod.baseline: off`, a resumed task) the seal holds what set-up filled. Measured in
 * bench/check-caches.ts; the decision is in docs/threat-model.md.
 *
 * The base's **build state** is sealed the same way (bench/monorepo-dod.ts): before the baseline's first check the
 * tree is listed ({@link WARM_BUILD_DIR}); the seal copies what the baseline added to the tree — new directories
 * (`dist/`, `lib/`), `*.tsbuildinfo` and emitted `.js`/`.d.ts`/`.map` files, never under `node_modules` or
 * `.git` — with their timestamps into `build/`, and jest's cache (in the warm `tmp/`). Before every later check the
 * worker's `*.tsbuildinfo` and its version of each sealed path are removed, every file of the tree is touched
 * (newer than any sealed output, so `tsc -b` compares the content hashes the base's `.tsbuildinfo` holds instead of
 * trusting mtimes the worker can set), and the base's outputs are copied in: `tsc -b` rebuilds what changed.
 */
import type { SandboxRuntime } from '../../core/ports.js';
import { SANDBOX_HOME } from '../../sandbox/container-options.js';
import { SANDBOX_WORKDIR } from '../layout.js';
import { PYTHON_VENV_DIR } from './detect-setup.js';

/** Where the baseline's checks keep their caches (the worker's uid; before any worker run). */
export const WARM_CACHE_DIR = '/tmp/agent-runner-warm-cache';
/** The sealed caches: the keeper's, read-only for everyone. */
export const SEALED_CACHE_DIR = '/tmp/agent-runner-cache';
/** The tree's listing before the baseline's first check (the worker's uid; before any worker run). */
export const WARM_BUILD_DIR = '/tmp/agent-runner-warm-build';

/**
 * What the build state never enters: git's directory and the set-up's outputs (`node_modules`, the detected
 * Python venv). Touching a venv's files would make Python recompile its bytecode there, which the set-up's
 * outputs check (parallel work's integration sandbox) rightly sees as a change.
 */
const PRUNED = `\\( -path ./.git -o -name node_modules -o -path ./${PYTHON_VENV_DIR} \\) -prune`;

/** Lists the tree in the current directory, NUL-separated and sorted, without {@link PRUNED}. */
const LIST_TREE = `find . ${PRUNED} -o -print0 | LC_ALL=C sort -z`;

/**
 * Shell run by the baseline's checks (`warm`) in the tree's directory: the listing the seal compares with, made
 * once, before the first check wrote anything.
 */
export const WARM_BUILD_SCRIPT = [
  `if [ ! -e ${WARM_BUILD_DIR}/before ]; then`,
  `  mkdir -p ${WARM_BUILD_DIR} && ${LIST_TREE} > ${WARM_BUILD_DIR}/before.part && mv ${WARM_BUILD_DIR}/before.part ${WARM_BUILD_DIR}/before`,
  'fi',
].join('\n');

/**
 * Shell run before a later check (`use`) in the tree's directory, as the worker's uid, when the sealed caches
 * passed their ownership test (`$sealed` is their directory): the base's build state replaces the worker's.
 */
export const RESTORE_BUILD_SCRIPT = [
  'if [ -f "$sealed/build.list" ] && [ -d "$sealed/build" ]; then',
  // The worker's incremental state never counts, wherever it put it.
  `  find . ${PRUNED} -o -name '*.tsbuildinfo' -type f -exec rm -f {} + 2>/dev/null`,
  '  while IFS= read -r -d "" p; do rm -rf "$p"; done < "$sealed/build.list"',
  // Every input newer than every sealed output: tsc -b then compares content hashes, not mtimes the worker set.
  `  find . ${PRUNED} -o -type f -exec touch -c {} + 2>/dev/null`,
  '  cp -R --preserve=timestamps "$sealed/build/." . 2>/dev/null',
  '  while IFS= read -r -d "" p; do chmod -R u+w "$p" 2>/dev/null; done < "$sealed/build.list"',
  'fi',
].join('\n');

const SEAL_SCRIPT = [
  `dst=${SEALED_CACHE_DIR}`,
  // Sealed once per sandbox; anything else already there is not the keeper's to trust.
  '[ -e "$dst" ] && exit 0',
  'mkdir -m 0755 "$dst" || exit 1',
  `[ -d ${WARM_CACHE_DIR} ] && cp -R ${WARM_CACHE_DIR} "$dst/xdg" 2>/dev/null`,
  `[ -d ${SANDBOX_HOME}/go/pkg/mod ] && cp -R ${SANDBOX_HOME}/go/pkg/mod "$dst/gomod" 2>/dev/null`,
  // Of the baseline's temporary files only jest's cache is kept (others can be large and are no cache).
  `if [ -d "$dst/xdg/tmp" ]; then find "$dst/xdg/tmp" -mindepth 1 -maxdepth 1 ! -name 'jest_*' -exec rm -rf {} +; fi`,
  // The base's build state: what the baseline added to the tree (see the module comment).
  `if [ -f ${WARM_BUILD_DIR}/before ] && [ ! -L ${WARM_BUILD_DIR}/before ] && cd ${SANDBOX_WORKDIR}; then`,
  `  ${LIST_TREE} > "$dst/after"`,
  `  LC_ALL=C comm -z -13 ${WARM_BUILD_DIR}/before "$dst/after" > "$dst/added"`,
  '  declare -A added; while IFS= read -r -d "" p; do added[$p]=1; done < "$dst/added"',
  '  mkdir -m 0755 "$dst/build"; : > "$dst/build.list"',
  '  while IFS= read -r -d "" p; do',
  // Only the top of what was added (a new directory is copied whole), and only build outputs.
  '    [ -n "${added[${p%/*}]}" ] && continue',
  '    if [ -L "$p" ]; then continue; elif [ -d "$p" ]; then :; else case "$p" in',
  '      *.tsbuildinfo|*.js|*.mjs|*.cjs|*.d.ts|*.d.mts|*.d.cts|*.map) ;; *) continue ;; esac; fi',
  '    cp -R --preserve=timestamps --parents "$p" "$dst/build/" 2>/dev/null && printf "%s\\0" "$p" >> "$dst/build.list"',
  '  done < "$dst/added"',
  '  rm -f "$dst/after" "$dst/added"',
  'fi',
  'chmod -R a+rX,a-w "$dst" 2>/dev/null',
  'du -sk "$dst" | cut -f1',
].join('\n');

/**
 * Seals the caches (see the module comment): run as `keeper` (`uid:gid`), before any worker run. Returns the
 * sealed size in KiB (null when nothing could be sealed); never throws for a seal that failed, the checks then
 * run with empty caches as before.
 */
export async function sealCheckCaches(
  runtime: SandboxRuntime,
  sandboxId: string,
  keeper: string,
  signal?: AbortSignal,
): Promise<number | null> {
  const sealed = await runtime
    .exec(sandboxId, ['bash', '-c', SEAL_SCRIPT], {
      user: keeper,
      timeoutMs: 120_000,
      graceMs: 2_000,
      signal,
    })
    .catch(() => null);
  // The warm directories are the worker's: it goes with the worker's uid (it frees /tmp, a tmpfs).
  await runtime
    .exec(sandboxId, ['rm', '-rf', WARM_CACHE_DIR, WARM_BUILD_DIR], {
      timeoutMs: 60_000,
      graceMs: 2_000,
      signal,
    })
    .catch(() => null);
  const size = Number(sealed?.stdoutTail.trim());
  return sealed?.exitCode === 0 && Number.isFinite(size) ? size : null;
}
