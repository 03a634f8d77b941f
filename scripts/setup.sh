#!/usr/bin/env bash
# Prepares this machine to run agent-runner, from the agent-runner checkout. Idempotent and fast when
# everything is in place:
#   1. a Docker engine answers and a base image exists            (scripts/ensure-docker.sh)
#   2. node_modules is installed (npm ci when missing or older than package-lock.json)
#   3. dist/ is built                                              (npm run build)
#   4. PostgreSQL for the control plane answers on 127.0.0.1:55432 (scripts/postgres.sh)
#   5. gVisor's runsc is installed and registered with the engine (scripts/ensure-runsc.sh; without root or
#      sudo it says so and tasks run under runc)
#   6. the worker images are built, or reused when their tags and labels match (agent-runner image build):
#      codex alone, and codex with every other worker
# The host's CA bundle is trusted inside the image so containers can reach the npm registry behind a
# TLS-inspecting proxy; AGENT_RUNNER_CA_CERT names another bundle (empty: none).
# Works as root; otherwise the steps that need root use sudo.
set -euo pipefail

log() { printf '[setup] %s\n' "$*" >&2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

base="$(bash scripts/ensure-docker.sh | tail -n 1)"
[ -n "$base" ] || { log "ensure-docker.sh did not name a base image"; exit 1; }
log "base image: $base"
# ensure-docker.sh falls back to the default socket when DOCKER_HOST does not answer; do the same here.
if [ -n "${DOCKER_HOST:-}" ] && ! timeout 10 docker info >/dev/null 2>&1; then unset DOCKER_HOST; fi

# npm writes node_modules/.package-lock.json on every install: older than package-lock.json means stale.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing dependencies (npm ci)"
  npm ci --no-fund --no-audit >&2
fi

log "building (npm run build)"
npm run --silent build >&2

ca="${AGENT_RUNNER_CA_CERT-/etc/ssl/certs/ca-certificates.crt}"
if [ -n "${AGENT_RUNNER_CA_CERT:-}" ] && [ ! -f "$ca" ]; then log "AGENT_RUNNER_CA_CERT=$ca is not a file"; exit 1; fi
ca_args=()
if [ -n "$ca" ] && [ -f "$ca" ]; then ca_args=(--ca-cert "$ca"); fi

# A user outside the docker group reaches the engine only through sudo.
run_cli=(node bin/agent-runner.js)
if [ "$(id -u)" != 0 ] && ! docker info >/dev/null 2>&1; then run_cli=(sudo -E node bin/agent-runner.js); fi

# gVisor for sandbox.runtime runsc/auto and the security suite's second runtime (SIGHUP of dockerd, no restart).
log "sandbox runtime runsc: $(bash scripts/ensure-runsc.sh | tail -n 1)"

# The control plane's database (serve --control, its tests): Debian's postgresql, our own cluster.
bash scripts/postgres.sh >/dev/null

log "worker image (first build downloads the Codex CLI, about 400 MB)"
"${run_cli[@]}" image build --worker-only --base-image "$base" "${ca_args[@]}"

# The image with every other worker beside codex (Claude Code, Gemini CLI, Qwen Code, OpenCode; about 400 MB
# more to download): what a config offering them all runs, and whose layers every smaller set reuses (the test
# suite's worker tests).
log "worker image with every worker (workers.claude, workers.gemini, workers.qwen, workers.opencode)"
"${run_cli[@]}" image build --worker-only --worker claude --worker gemini --worker qwen --worker opencode --base-image "$base" "${ca_args[@]}"
