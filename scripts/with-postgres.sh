#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL beside it (scripts/postgres.sh, on a free loopback
# port, in a temporary directory) and TRANSFERD_TEST_POSTGRES_URL naming it, so the store tests run
# against PostgreSQL too; the server is stopped and removed afterwards, also when the command fails.
# Usage: scripts/with-postgres.sh COMMAND [ARGS…]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/transferd-test-pg.XXXXXX)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() {
  "$here/postgres.sh" stop "$dir/data" || true
  rm -rf "$dir"
}
trap cleanup EXIT
# The server runs as another user when we are root: it needs to reach its directory.
chmod 755 "$dir"
"$here/postgres.sh" start "$dir/data" "$port"
TRANSFERD_TEST_POSTGRES_URL=$("$here/postgres.sh" url "$dir/data" "$port")
export TRANSFERD_TEST_POSTGRES_URL
status=0
"$@" || status=$?
exit $status
