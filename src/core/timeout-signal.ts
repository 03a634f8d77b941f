/**
 * A signal that aborts after `ms` with a `TimeoutError`, as `AbortSignal.timeout` does, but held by its timer.
 * Node 20 holds the signal of `AbortSignal.timeout` weakly, and `AbortSignal.any` does not hold its sources:
 * a timeout combined with another signal was collected by the garbage collector and never fired (seen here: an
 * observation cut by the wall clock hung when the process was busy). This one cannot be collected before it
 * fires; its timer does not keep the process alive.
 */
export function timeoutSignal(ms: number): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    Math.max(1, Math.min(ms, 2 ** 31 - 1)),
  );
  (timer as { unref?: () => void }).unref?.();
  return controller.signal;
}
