#!/usr/bin/env bash
# Ensures a PostgreSQL server for the control plane (`serve --control`) answers on 127.0.0.1, the way
# ensure-docker.sh ensures a Docker engine. Idempotent: every step checks first.
#   - no PostgreSQL binaries: install Debian's `postgresql` (15 on bookworm)
#   - no cluster under $AGENT_RUNNER_PG_DATA (default /var/lib/agent-runner-pg/data): initdb one, owned by the
#     `postgres` user, local socket trust, TCP on 127.0.0.1 only with scram-sha-256 passwords; the superuser's
#     random password is written once to $AGENT_RUNNER_PG_ROOT/admin-url (mode 0600, root's alone)
#   - not running: pg_ctl start on port $AGENT_RUNNER_PG_PORT (default 55432)
# `postgres.sh stop` stops it (tests use it to take the database away mid-task).
# Prints the superuser's URL on its last line (stdout); progress goes to stderr.
set -euo pipefail

log() { printf '[postgres] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }

pg_root="${AGENT_RUNNER_PG_ROOT:-/var/lib/agent-runner-pg}"
data="${AGENT_RUNNER_PG_DATA:-$pg_root/data}"
port="${AGENT_RUNNER_PG_PORT:-55432}"
admin_file="$pg_root/admin-url"

bin_dir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
if [ -z "$(bin_dir)" ]; then
  log "no PostgreSQL: installing Debian's postgresql"
  as_root apt-get update -qq >&2
  # The package may create and start its own cluster on 5432; ours is separate (own data directory and port).
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends postgresql >&2
fi
bin="$(bin_dir)"
[ -n "$bin" ] || { log "postgresql installed but no /usr/lib/postgresql/*/bin"; exit 1; }
pg_ctl=("$bin/pg_ctl" -D "$data" -w -t 60)

if [ "${1:-start}" = stop ]; then
  as_postgres "${pg_ctl[@]}" stop -m fast >&2 || true
  exit 0
fi

if [ ! -f "$data/PG_VERSION" ]; then
  log "initdb $data"
  as_root mkdir -p "$pg_root"
  as_root chmod 0755 "$pg_root"
  as_root install -d -o postgres -g postgres -m 0700 "$data"
  password="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  pwfile="$(as_root mktemp)"
  printf '%s\n' "$password" | as_root tee "$pwfile" >/dev/null
  as_root chown postgres "$pwfile"
  as_postgres "$bin/initdb" -D "$data" -U postgres --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >&2
  as_root rm -f "$pwfile"
  # Only the loopback address: the fleet's nodes on other machines reach it through a tunnel or a real server.
  printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\nmax_connections = 200\n" \
    "$port" "$data" | as_postgres tee -a "$data/postgresql.conf" >/dev/null
  umask 077
  printf 'postgres://postgres:%s@127.0.0.1:%s/postgres\n' "$password" "$port" | as_root tee "$admin_file" >/dev/null
  as_root chmod 0600 "$admin_file"
fi

if ! as_postgres "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; then
  log "starting PostgreSQL on 127.0.0.1:$port (log: $pg_root/postgres.log)"
  as_root touch "$pg_root/postgres.log"
  as_root chown postgres "$pg_root/postgres.log"
  as_postgres "${pg_ctl[@]}" -l "$pg_root/postgres.log" start >&2
fi
log "PostgreSQL $(as_postgres "$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
as_root cat "$admin_file"
