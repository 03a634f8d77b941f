/**
 * Stopping every process of one exec, including those that left its process group and session (codex starts
 * its shell commands with `setsid`). Each exec carries an environment marker `AGENT_RUNNER_EXEC=<uuid>` that
 * its descendants inherit; the killer is a second exec (same user) that finds the marked processes through
 * /proc/<pid>/environ and signals them: SIGTERM, a grace period while any survives, then SIGKILL until none is
 * left.
 *
 * Limits, said plainly: a process that clears its environment (`env -i`) escapes the marker, and only processes
 * of the killer's user can be read and signalled. Both need a worker that tries to escape; a worker that does
 * is still stopped when the task's container is removed.
 */

/** The variable that marks an exec's processes. */
export const EXEC_MARKER_VARIABLE = 'AGENT_RUNNER_EXEC';

/**
 * The end of both scripts: `<signal> TERM`, a grace period of `$grace_ticks` tenths of a second while any
 * survives (`<signal> 0` counts them), then `<signal> KILL` until none is left. `<signal> SIG` sets `found` to
 * the number of processes it signalled. Exit 0: none is left; exit 3: some survived 50 rounds of SIGKILL.
 */
function escalation(signal: string): string {
  return `${signal} TERM
tick=0
while [ "$found" -gt 0 ] && [ "$tick" -lt "$grace_ticks" ]; do
  sleep 0.1 2>/dev/null
  tick=$((tick + 1))
  ${signal} 0
done
round=0
while [ "$round" -lt 50 ]; do
  ${signal} KILL
  [ "$found" -eq 0 ] && { await_reaped; exit 0; }
  sleep 0.05 2>/dev/null
  round=$((round + 1))
done
exit 3
`;
}

/**
 * A killed process holds its pid until the container's init reaps it, and the pids limit counts it meanwhile:
 * after a fork bomb the next exec could not start (exit 126). So the scripts wait, at most about two seconds,
 * until no zombie is left. The state is read after the last \`)\` of /proc/<pid>/stat (the command name before
 * it is the worker's to choose). \`sleep\` cannot fork while the limit is reached: bash then waits in a builtin.
 */
const AWAIT_REAPED = `await_reaped() {
  waited=0
  while [ "$waited" -lt 40 ]; do
    zombies=0
    for stat in /proc/[0-9]*/stat; do
      IFS= read -r line 2>/dev/null <"$stat" || continue
      case "\${line##*) }" in Z*) zombies=$((zombies + 1)) ;; esac
    done
    [ "$zombies" -eq 0 ] && return 0
    sleep 0.05 2>/dev/null || read -r -t 0.05 _ </dev/zero 2>/dev/null
    waited=$((waited + 1))
  done
  return 0
}
`;

/**
 * Runs under bash (builtins only in the scan, so it works even when the pids limit leaves no room for a fork)
 * or, when the image has no bash, under sh with `tr` and `grep`. No text from the model or the user is in it:
 * the marker and the grace period come in as positional arguments.
 *
 * Exit 0: no marked process is left. Exit 3: some survived SIGKILL (they can only be zombies or processes in
 * uninterruptible sleep; container removal ends them).
 */
const KILLER_SCRIPT = String.raw`
cd /proc || exit 4
marker="$1=$2"
grace_ticks=$3
found=0
has_marker() {
  if [ -n "$BASH_VERSION" ]; then
    while IFS= read -r -d '' entry; do
      [ "$entry" = "$marker" ] && return 0
    done 2>/dev/null <"/proc/$1/environ"
    return 1
  fi
  tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | grep -qxF "$marker"
}
signal_marked() {
  found=0
  for pid in [0-9]*; do
    [ "$pid" = "$$" ] && continue
    if has_marker "$pid"; then
      kill -s "$1" "$pid" 2>/dev/null && found=$((found + 1))
    fi
  done
}
${AWAIT_REAPED}
${escalation('signal_marked')}`;

/** The killer's argv for one interpreter (`/bin/bash` first, `/bin/sh` when bash is missing). */
export function killerArgv(interpreter: '/bin/bash' | '/bin/sh', marker: string, graceMs: number): string[] {
  const graceTicks = Math.max(0, Math.ceil(graceMs / 100));
  return [
    interpreter,
    '-c',
    KILLER_SCRIPT,
    'agent-runner-killer',
    EXEC_MARKER_VARIABLE,
    marker,
    String(graceTicks),
  ];
}

/**
 * Ending everything a worker run (or a DoD check, or a set-up command) left behind, whatever it did to its
 * environment: `setsid`, `nohup`, double forks, `env -i`, a renamed argv0 and SIGSTOP all escape the exec
 * marker above, but not this. Run as the worker's user, it signals every process except itself, its own
 * children (the `sleep` of its waits) and PID 1. The kernel decides what "the worker's" means: without
 * capabilities a signal reaches only processes of the same uid, so the sandbox's init, keeper and gateway
 * relay (the keeper uid, see keeperIdsFor) refuse it and are neither counted nor spared by a rule the worker
 * could imitate; a process that made itself non-dumpable (its /proc entry then belongs to root) is still the
 * worker's to the kernel. SIGTERM, a grace period while any survives, then SIGKILL until none is left (a
 * stopped process dies of SIGKILL too).
 *
 * It parses /proc/<pid>/stat after the last `)`, because the command name before it is the worker's to
 * choose (spaces and parentheses included). Builtins only in the scan. Exit 0: nothing is left; 3: something
 * survived SIGKILL (a process in uninterruptible sleep); 4: no /proc.
 */
const REAPER_SCRIPT = String.raw`
cd /proc || exit 4
grace_ticks=$1
declare -A parent
scan() {
  parent=()
  for pid in [0-9]*; do
    IFS= read -r line 2>/dev/null <"/proc/$pid/stat" || continue
    rest=${'$'}{line##*) }
    fields=($rest)
    parent[$pid]=${'$'}{fields[1]}
  done
}
is_own() {
  local pid=$1 hops=0
  [ "$pid" = 1 ] && return 0
  while [ -n "$pid" ] && [ "$pid" != 0 ] && [ "$pid" != 1 ] && [ "$hops" -lt 64 ]; do
    [ "$pid" = "$$" ] && return 0
    pid=${'$'}{parent[$pid]}
    hops=$((hops + 1))
  done
  return 1
}
found=0
signal_strays() {
  scan
  found=0
  for pid in "${'$'}{!parent[@]}"; do
    is_own "$pid" && continue
    kill -s "$1" "$pid" 2>/dev/null && found=$((found + 1))
  done
}
${AWAIT_REAPED}
${escalation('signal_strays')}`;

/** The reaper's argv (see REAPER_SCRIPT); it needs bash, which the worker image has. */
export function reaperArgv(graceMs: number): string[] {
  const graceTicks = Math.max(0, Math.ceil(graceMs / 100));
  return ['/bin/bash', '-c', REAPER_SCRIPT, 'agent-runner-reaper', String(graceTicks)];
}
