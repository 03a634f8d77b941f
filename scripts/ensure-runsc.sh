#!/usr/bin/env bash
# Ensures gVisor's runsc is installed and registered with the Docker engine as the runtime `runsc`, so tasks
# can run under a kernel of their own (sandbox.runtime: runsc, or auto). Idempotent; never restarts dockerd:
#   - runsc missing or older than 20240729: Debian's package (on Debian 12 from bookworm-backports, whose
#     runsc is 20240729; bookworm's own 20221219 panics under the security suite)
#   - /etc/docker/daemon.json: runtimes.runsc merged into what the file holds (other keys kept, valid JSON),
#     with the arguments this engine needs: --network=none (Docker 20.10 refuses gVisor's own network in
#     the root network namespace; the sandbox keeps its loopback, all the gateway needs) and --host-uds=all
#     (the gateway's unix socket is bind-mounted from the host)
#   - the engine reloads `runtimes` on SIGHUP of dockerd (running containers are not touched)
# Without root or sudo it says so and changes nothing: tasks then run under runc (sandbox.runtime: auto).
# Exits 0 either way; the last line on stdout is `runsc` when the engine offers it, else `runc`.
set -euo pipefail

log() { printf '[ensure-runsc] %s\n' "$*" >&2; }

daemon_json="${AGENT_RUNNER_DAEMON_JSON:-/etc/docker/daemon.json}"
runsc_args='["--network=none","--host-uds=all"]'

engine_has_runsc() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

if [ "$(id -u)" = 0 ]; then
  as_root() { "$@"; }
elif sudo -n true 2>/dev/null; then
  as_root() { sudo -n "$@"; }
else
  if engine_has_runsc; then echo runsc; exit 0; fi
  log "not root and no sudo: cannot install or register runsc; tasks run under runc (sandbox.runtime: auto)"
  echo runc
  exit 0
fi

# The oldest runsc the sandbox is tested with. Debian 12's own package (20221219) panics in its Sentry under
# heavy /proc reading (the security suite's process probes); bookworm-backports carries 20240729, which does not.
runsc_wanted="0.0~20240729"
runsc_version() { dpkg-query -W -f='${Version}' runsc 2>/dev/null || true; }
runsc_current() { local v; v="$(runsc_version)"; [ -n "$v" ] && dpkg --compare-versions "$v" ge "$runsc_wanted"; }
codename="$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")"
backports=/etc/apt/sources.list.d/agent-runner-bookworm-backports.sources

install_runsc() {
  if [ "$codename" = bookworm ]; then
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      log "adding Debian's bookworm-backports (runsc $runsc_wanted; bookworm's own is older)"
      printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' \
        'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | as_root tee "$backports" >/dev/null
    fi
    as_root apt-get update -qq >&2 && as_root apt-get install -y -qq --no-install-recommends -t bookworm-backports runsc >&2 && return 0
    log "runsc from bookworm-backports could not be installed; trying bookworm's own"
  fi
  as_root apt-get install -y -qq --no-install-recommends runsc >&2 2>/dev/null ||
    { as_root apt-get update -qq >&2 && as_root apt-get install -y -qq --no-install-recommends runsc >&2; }
}

if ! runsc_current; then
  log "installing gVisor (Debian's runsc, at least $runsc_wanted; installed: $(runsc_version || true))"
  if ! install_runsc && ! command -v runsc >/dev/null 2>&1; then
    log "runsc could not be installed; tasks run under runc (sandbox.runtime: auto)"
    echo runc
    exit 0
  fi
  runsc_current || log "runsc $(runsc_version) is older than $runsc_wanted: it may panic under heavy /proc reading"
fi
runsc_path="$(command -v runsc)"

# Merge with node (setup.sh needs it anyway): keep every other key, write only when something changes.
changed="$(as_root node -e '
  const fs = require("node:fs");
  const [file, path, args] = process.argv.slice(1);
  let config = {};
  try { config = JSON.parse(fs.readFileSync(file, "utf8")); } catch (error) {
    if (error.code !== "ENOENT") { console.error(`${file} is not valid JSON (${error.message}); fix it first`); process.exit(1); }
  }
  const wanted = { path, runtimeArgs: JSON.parse(args) };
  if (JSON.stringify(config.runtimes?.runsc) === JSON.stringify(wanted)) { console.log("unchanged"); process.exit(0); }
  config.runtimes = { ...(config.runtimes ?? {}), runsc: wanted };
  fs.mkdirSync(require("node:path").dirname(file), { recursive: true });
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(config, null, 2) + "\n");
  fs.renameSync(`${file}.tmp`, file);
  console.log("changed");
' "$daemon_json" "$runsc_path" "$runsc_args")" || { log "could not update $daemon_json"; echo runc; exit 0; }

if [ "$changed" = changed ] || ! engine_has_runsc; then
  pid="$(pidof dockerd || true)"
  if [ -z "$pid" ]; then
    log "no dockerd process to reload; runsc is registered in $daemon_json for its next start"
  else
    log "registered runsc in $daemon_json; reloading dockerd's configuration (SIGHUP, no restart)"
    as_root kill -HUP $pid
    for _ in $(seq 1 20); do engine_has_runsc && break; sleep 0.5; done
  fi
fi

if engine_has_runsc; then
  echo runsc
else
  log "the engine does not list runsc after the reload; tasks run under runc (see dockerd's log)"
  echo runc
fi
