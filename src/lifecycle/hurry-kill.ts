/**
 * The second Ctrl-C: SIGKILL now, instead of SIGTERM and the grace period, to every process started by an
 * exec in the sandbox. Exec'd processes (and their descendants) carry the runtime's exec marker variable; the
 * container's init and keeper do not, so they survive and the runner can still save the worker's
 * uncommitted work before it removes the container. Builtins only in the scan, like the runtime's killer.
 */
import { EXEC_MARKER_VARIABLE } from '../sandbox/exec-killer.js';

const SCRIPT = String.raw`
for dir in /proc/[0-9]*; do
  pid=${'$'}{dir#/proc/}
  [ "$pid" = "$$" ] && continue
  while IFS= read -r -d '' entry; do
    case "$entry" in "$1="*) kill -KILL "$pid" 2>/dev/null; break ;; esac
  done 2>/dev/null <"$dir/environ"
done
exit 0
`;

/** argv of the exec that kills every exec'd process of the sandbox user at once. */
export function hurryKillArgv(): string[] {
  return ['/bin/bash', '-c', SCRIPT, 'agent-runner-hurry', EXEC_MARKER_VARIABLE];
}
