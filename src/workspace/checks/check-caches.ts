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
 */
import type { SandboxRuntime } from '../../core/ports.js';
import { SANDBOX_HOME } from '../../sandbox/container-options.js';

/** Where the baseline's checks keep their caches (the worker's uid; before any worker run). */
export const WARM_CACHE_DIR = '/tmp/agent-runner-warm-cache';
/** The sealed caches: the keeper's, read-only for everyone. */
export const SEALED_CACHE_DIR = '/tmp/agent-runner-cache';

const SEAL_SCRIPT = [
  `dst=${SEALED_CACHE_DIR}`,
  // Sealed once per sandbox; anything else already there is not the keeper's to trust.
  '[ -e "$dst" ] && exit 0',
  'mkdir -m 0755 "$dst" || exit 1',
  `[ -d ${WARM_CACHE_DIR} ] && cp -R ${WARM_CACHE_DIR} "$dst/xdg" 2>/dev/null`,
  `[ -d ${SANDBOX_HOME}/go/pkg/mod ] && cp -R ${SANDBOX_HOME}/go/pkg/mod "$dst/gomod" 2>/dev/null`,
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
  // The warm directory is the worker's: it goes with the worker's uid (it frees /tmp, a tmpfs).
  await runtime
    .exec(sandboxId, ['rm', '-rf', WARM_CACHE_DIR], { timeoutMs: 60_000, graceMs: 2_000, signal })
    .catch(() => null);
  const size = Number(sealed?.stdoutTail.trim());
  return sealed?.exitCode === 0 && Number.isFinite(size) ? size : null;
}
