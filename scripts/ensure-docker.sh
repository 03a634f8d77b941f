#!/usr/bin/env bash
# Ensures a Docker engine answers and a base image for the worker image exists.
# Idempotent: every step checks first and does nothing when its result is already there.
#   - no engine answering: install Debian's docker.io when dockerd is missing, then start dockerd
#   - base image ($AGENT_RUNNER_BASE_IMAGE, default node:22-bookworm-slim) not present and not pullable:
#     build agent-runner-base:bookworm from Debian's packages with debootstrap + docker import
# Prints the base image to use on its last line (stdout); progress goes to stderr.
set -euo pipefail

log() { printf '[ensure-docker] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then as_root apt-get update -qq >&2; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >&2
}

# Root, or a user in the docker group, talks to the engine directly; any other user goes through sudo.
direct_docker=0
if [ "$(id -u)" = 0 ]; then direct_docker=1; fi
docker_() { if [ "$direct_docker" = 1 ]; then docker "$@"; else sudo docker "$@"; fi; }
engine_answers() {
  if timeout 10 docker info >/dev/null 2>&1; then direct_docker=1; return 0; fi
  [ "$direct_docker" = 0 ] || return 1
  # Not root and no direct access: ask through sudo only when an engine seems to be there.
  { pgrep -x dockerd >/dev/null 2>&1 || [ -S /var/run/docker.sock ]; } && sudo timeout 10 docker info >/dev/null 2>&1
}

if ! command -v docker >/dev/null 2>&1 || ! engine_answers; then
  if ! command -v dockerd >/dev/null 2>&1; then
    log "no dockerd: installing Debian's docker.io"
    apt_install docker.io iptables
  fi
  if ! engine_answers; then
    if [ -n "${DOCKER_HOST:-}" ]; then
      log "DOCKER_HOST=$DOCKER_HOST does not answer; using the default socket (and a local dockerd) instead"
      unset DOCKER_HOST
    fi
  fi
  if ! engine_answers; then
    log "starting dockerd (log: /var/log/agent-runner-dockerd.log)"
    as_root sh -c 'nohup dockerd >/var/log/agent-runner-dockerd.log 2>&1 &'
    for _ in $(seq 1 60); do engine_answers && break; sleep 1; done
    engine_answers || { log "dockerd did not answer within 60 s; see /var/log/agent-runner-dockerd.log"; exit 1; }
  fi
fi
log "docker engine $(docker_ version --format '{{.Server.Version}}')"

base="${AGENT_RUNNER_BASE_IMAGE:-node:22-bookworm-slim}"
local_base="agent-runner-base:bookworm"
if docker_ image inspect "$base" >/dev/null 2>&1; then
  echo "$base"; exit 0
fi
if docker_ image inspect "$local_base" >/dev/null 2>&1; then
  log "using $local_base (built earlier from Debian's packages)"
  echo "$local_base"; exit 0
fi
log "pulling $base"
if timeout 60 docker_ pull -q "$base" >&2 2>/dev/null; then
  echo "$base"; exit 0
fi
log "$base cannot be pulled: building $local_base from Debian's packages with debootstrap"
command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
rootfs=$(mktemp -d /tmp/agent-runner-rootfs.XXXXXX)
trap 'as_root rm -rf "$rootfs"' EXIT
# debootstrap's own resolver cannot install npm (its dependencies go through virtual packages), so the
# base system comes from debootstrap and nodejs/npm from apt inside the new root.
as_root debootstrap --variant=minbase --include=git,ca-certificates,procps \
  bookworm "$rootfs" http://deb.debian.org/debian >&2
as_root cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
as_root chroot "$rootfs" apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive as_root chroot "$rootfs" \
  apt-get install -y -qq --no-install-recommends nodejs npm >&2
as_root chroot "$rootfs" apt-get clean
as_root rm -rf "$rootfs/var/lib/apt/lists"/* "$rootfs/etc/resolv.conf"
as_root tar -C "$rootfs" -c . | docker_ import - "$local_base" >&2
log "built $local_base"
echo "$local_base"
