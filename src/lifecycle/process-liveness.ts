/**
 * Is the process that owns a task (its lock, its container) still alive? Only answerable on the host it ran
 * on: a pid from another hostname says nothing here, so callers treat it as alive (never take over or remove
 * what may belong to a live runner elsewhere).
 */
import { readFileSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';

/** Who runs (or ran) a task. */
export interface ProcessIdentity {
  pid: number;
  hostname: string;
}

/** `alive`, `dead`, or `unknown` (another host: cannot be checked from here). */
export type Liveness = 'alive' | 'dead' | 'unknown';

/** True when `pid` names a live process on this machine. A zombie (killed, not yet reaped) counts as dead. */
export function isLocalProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else; still alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // `/proc/<pid>/stat`: "pid (comm) S ..."; comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    // No /proc (macOS): kill(0) succeeded, so it is alive.
    return true;
  }
}

/** Liveness of a recorded owner, as seen from this host. */
export function livenessOf(owner: ProcessIdentity, localHostname = osHostname()): Liveness {
  if (owner.hostname !== localHostname) return 'unknown';
  return isLocalProcessAlive(owner.pid) ? 'alive' : 'dead';
}
