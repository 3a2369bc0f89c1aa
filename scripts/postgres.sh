#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests, from Debian's packages (postgresql, /usr/lib/postgresql/*/bin):
#   scripts/postgres.sh start DIR PORT   initdb in DIR (once), start it on 127.0.0.1:PORT, trust auth
#   scripts/postgres.sh stop DIR         stop it (fast: connections are cut, as in a crash of the server)
#   scripts/postgres.sh url DIR PORT     print the URL to connect to it
# PostgreSQL refuses to run as root: as root it runs as the system user transferd-pg (created when
# missing); otherwise as the caller.
set -euo pipefail
what=${1:?start|stop|url}
dir=${2:?data directory}
port=${3:-}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] && [ -x "$bin/pg_ctl" ] || { echo "postgres.sh: no PostgreSQL server (apt-get install postgresql)" >&2; exit 1; }

# Runs a command as the user the server runs as.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u transferd-pg -- "$@"
  else
    "$@"
  fi
}

case $what in
  url)
    echo "postgres://postgres@127.0.0.1:${port:?port}/postgres"
    ;;
  start)
    : "${port:?port}"
    if [ "$(id -u)" -eq 0 ]; then
      id transferd-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin transferd-pg
      mkdir -p "$dir"
      chown transferd-pg "$dir"
    else
      mkdir -p "$dir"
    fi
    chmod 700 "$dir"
    if [ ! -f "$dir/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$dir" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$dir.initdb.log" 2>&1 ||
        { cat "$dir.initdb.log" >&2; exit 1; }
    fi
    # The socket directory is the data directory: /run/postgresql may not exist or be writable.
    # fsync stays on: the tests restart the server under a live store and expect what was committed.
    as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null ||
      { cat "$dir/server.log" >&2; exit 1; }
    ;;
  stop)
    [ -f "$dir/postmaster.pid" ] || exit 0
    as_owner "$bin/pg_ctl" -D "$dir" -m fast -w -t 60 stop >/dev/null
    ;;
  *)
    echo "usage: $0 start|stop|url DIR [PORT]" >&2
    exit 2
    ;;
esac
