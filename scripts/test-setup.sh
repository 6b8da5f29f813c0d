#!/usr/bin/env bash
# What the test suite needs before it starts, for `make test` and `.ci/run` alike: PostgreSQL and
# Redis up (started when installed locally but down) and Debian's Chromium for the browser tests
# (installed with apt-get when missing and this user may). When something cannot be set up here,
# it stops with one line saying what to install or set.
set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/evalsite}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/15}"
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
WAIT_SECONDS=30

fail() {
  echo "test setup: $*" >&2
  exit 1
}

# "host port" of a URL, with the scheme's default port.
host_port() {
  python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(p.hostname or "127.0.0.1", p.port or int(sys.argv[2]))' "$1" "$2"
}

is_local() {
  [[ "$1" == "127.0.0.1" || "$1" == "localhost" || "$1" == "::1" ]]
}

# Run a command as root: directly when we are root, through passwordless sudo when allowed.
as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 1
  fi
}

wait_for() {
  local what="$1"
  shift
  for _ in $(seq "$WAIT_SECONDS"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 1
  done
  fail "$what did not come up within ${WAIT_SECONDS}s"
}

read -r PG_HOST PG_PORT <<<"$(host_port "$DATABASE_URL" 5432)"
pg_up() { pg_isready -h "$PG_HOST" -p "$PG_PORT" -q; }
command -v pg_isready >/dev/null 2>&1 || fail "PostgreSQL client tools are missing: install postgresql (apt-get install postgresql) or run the tests elsewhere"
if ! pg_up; then
  is_local "$PG_HOST" || fail "PostgreSQL is not reachable at $PG_HOST:$PG_PORT: start it or set DATABASE_URL"
  [[ -d /etc/postgresql ]] || fail "PostgreSQL is not installed: apt-get install postgresql (or set DATABASE_URL to a running server)"
  PG_VERSION="$(ls /etc/postgresql | head -n 1)"
  as_root true 2>/dev/null ||
    fail "PostgreSQL is down at $PG_HOST:$PG_PORT and this user cannot start it: run 'pg_ctlcluster $PG_VERSION main start' as root"
  started="$(as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" main start 2>&1)" ||
    fail "PostgreSQL is down at $PG_HOST:$PG_PORT and 'pg_ctlcluster $PG_VERSION main start' failed: $(echo "$started" | tail -n 1)"
  wait_for "PostgreSQL at $PG_HOST:$PG_PORT" pg_up
fi

read -r REDIS_HOST REDIS_PORT <<<"$(host_port "$REDIS_URL" 6379)"
command -v redis-cli >/dev/null 2>&1 || fail "Redis is missing: install redis-server (apt-get install redis-server)"
redis_up() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping; }
if ! redis_up >/dev/null 2>&1; then
  is_local "$REDIS_HOST" || fail "Redis is not reachable at $REDIS_HOST:$REDIS_PORT: start it or set REDIS_URL"
  command -v redis-server >/dev/null 2>&1 || fail "Redis is not installed: apt-get install redis-server (or set REDIS_URL to a running server)"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no >/dev/null
  wait_for "Redis at $REDIS_HOST:$REDIS_PORT" redis_up
fi

if [[ ! -x "$CHROMIUM" ]]; then
  if [[ "$CHROMIUM" == /usr/bin/chromium ]] && command -v apt-get >/dev/null 2>&1 && as_root true 2>/dev/null; then
    echo "test setup: installing Debian's Chromium for the browser tests" >&2
    as_root apt-get update -qq >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  fi
  [[ -x "$CHROMIUM" ]] || fail "the browser tests need Chromium at $CHROMIUM: install it with 'sudo apt-get install chromium' (or set CHROMIUM_PATH)"
fi
