#!/usr/bin/env bash
# Cluster mode on one machine: three transferd replicas on one PostgreSQL, sharing one data
# directory, each advertising its own loopback address. The bars, each printed with its ratio:
#   submit    batch submission across the replicas: at least 10,000 tasks/s in total. Each replica
#             gets its own session, created through it, and BENCH_CLUSTER_SUBMIT_CONNECTIONS
#             connections POSTing `tasks:batch` of BENCH_CLUSTER_BATCH suspended tasks (drive.py
#             submit-batch, as downloads.sh does for one transferd); every session must then store
#             exactly what was answered. BENCH_RUNS runs after a warm-up, the median judged.
#   get       a task GET on any replica at least 0.5x nginx serving a static file of the same
#             size, with the same wrk load (as http.sh): a download completed through replica 1,
#             read through each replica in turn; the lowest ratio is judged.
#   takeover  a replica killed with `kill -9` while running slow downloads from a local origin:
#             its transfers must be moving again on another replica within lease timeout + 5 s,
#             then complete with the right sha256, continued with Range (bench/cluster.py).
# A failed check (tasks lost, a wrong sha256, a replica gone) exits 1; a missed bar is printed.
#
# The database is a throwaway PostgreSQL from Debian's packages (scripts/postgres.sh, as an
# unprivileged user), its data directory in the scratch directory, removed at the end.
#
# Usage: bench/cluster.sh           (make bench-cluster; about 3 minutes)
#        BENCH_ONLY=get BENCH_CLUSTER_DATABASE=sqlite BENCH_CLUSTER_REPLICAS=1 bench/cluster.sh
#            the GET comparison alone on one transferd on SQLite, for a binary without cluster mode
# Environment:
#   BENCH_ONLY [submit,get,takeover]
#   BENCH_CLUSTER_REPLICAS [3]
#   BENCH_CLUSTER_DATABASE         empty: a throwaway PostgreSQL; postgres://…: that database;
#                                  sqlite: no database flags (one replica only)
#   BENCH_CLUSTER_LEASE_TIMEOUT [15]  --lease-timeout of every replica, in seconds
#   BENCH_CLUSTER_TASKS [150000]   tasks per submit run, across the replicas
#   BENCH_CLUSTER_BATCH [5000]     tasks per tasks:batch
#   BENCH_CLUSTER_SUBMIT_CONNECTIONS [2]  connections per replica
#   BENCH_CLUSTER_DOWNLOADS [4]    slow downloads of the takeover phase (about a minute each)
#   BENCH_RUNS [3]; THREADS [2], CONNECTIONS [64], DURATION [10s], WARMUP [2s] (wrk)
#   TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ONLY=${BENCH_ONLY:-submit,get,takeover}
REPLICAS=${BENCH_CLUSTER_REPLICAS:-3}
DATABASE=${BENCH_CLUSTER_DATABASE:-}
LEASE=${BENCH_CLUSTER_LEASE_TIMEOUT:-15}
TASKS=${BENCH_CLUSTER_TASKS:-150000}
BATCH=${BENCH_CLUSTER_BATCH:-5000}
SUBMIT_CONNECTIONS=${BENCH_CLUSTER_SUBMIT_CONNECTIONS:-2}
DOWNLOADS=${BENCH_CLUSTER_DOWNLOADS:-4}
RUNS=${BENCH_RUNS:-3}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
DRIVE=(python3 "$PWD/bench/drive.py")
SUBMIT_BAR=10000

want() { [[ ",$ONLY," == *",$1,"* ]]; }

if [ "$DATABASE" = sqlite ] && [ "$REPLICAS" != 1 ]; then
  log "BENCH_CLUSTER_DATABASE=sqlite runs one replica: SQLite has one writer per data directory"
  exit 2
fi

# --- the cluster ---------------------------------------------------------------------------------
replica_pids=()
replica_apis=()
postgres_dir=""

# shellcheck disable=SC2317  # run by the EXIT trap
cluster_cleanup() {
  local pid
  for pid in "${replica_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${replica_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  transferd_pid=""
  if [ -n "$postgres_dir" ]; then scripts/postgres.sh stop "$postgres_dir" || true; fi
  cleanup
}

start_database() {  # sets database_url
  if [ -n "$DATABASE" ]; then
    database_url=$DATABASE
    return
  fi
  local port
  port=$(free_port)
  postgres_dir="$work/postgres"
  scripts/postgres.sh start "$postgres_dir" "$port"
  database_url=$(scripts/postgres.sh url "$postgres_dir" "$port")
}

start_replicas() {  # REPLICAS replicas on $work/data and the database, each advertising its own address
  local n port flags
  token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  auth="Authorization: Bearer $token"
  for n in $(seq "$REPLICAS"); do
    port=$(free_port)
    flags=()
    [ "$DATABASE" = sqlite ] ||
      flags=(--database "$database_url" --lease-timeout "$LEASE" --advertise-address "127.0.0.1:$port")
    launch_transferd "$port" "$work/replica$n.log" "${flags[@]}"
    replica_pids+=("$transferd_pid")
    replica_apis+=("$api")
  done
  log "replicas: ${replica_apis[*]} (pids ${replica_pids[*]}), data directory $work/data"
}

replicas_alive() {  # exits 1, with the end of its log, when a replica that should run is gone
  local n
  for n in "${!replica_pids[@]}"; do
    if ! kill -0 "${replica_pids[$n]}" 2>/dev/null; then
      log "replica $((n + 1)) (pid ${replica_pids[$n]}) is gone; the end of its log:"
      tail -n 30 "$work/replica$((n + 1)).log" >&2
      exit 1
    fi
  done
}

# --- submit: tasks:batch through every replica at once ---------------------------------------------
bench_submit() {
  log "submit: $TASKS tasks per run in batches of $BATCH, $SUBMIT_CONNECTIONS connections per replica  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  local apis=() base r total text rps n secs rates=()
  for base in "${replica_apis[@]}"; do apis+=(--api "$base"); done
  for r in $(seq 0 "$RUNS"); do
    total=$TASKS
    [ "$r" = 0 ] && total=$(( BATCH * REPLICAS * 2 ))
    text=$("${DRIVE[@]}" submit-batch "${apis[@]}" --token "$token" --session "bench.submit.$run_id.r$r" \
             --url "$origin/origin.bin" --total "$total" --batch "$BATCH" --concurrency "$SUBMIT_CONNECTIONS" \
             --max-seconds 60)
    read -r rps n secs <<<"$text"
    replicas_alive
    if [ "$r" = 0 ]; then log "  warm-up: $rps tasks/s"; continue; fi
    log "  run $r: $rps tasks/s ($n tasks stored in ${secs} s)"
    rates+=("$rps")
  done
  printf '%s\n' "${rates[@]}" | sort -g | awk -v runs="${#rates[@]}" -v replicas="$REPLICAS" -v bar="$SUBMIT_BAR" '
    { v[NR] = $1 } END {
      m = v[int((NR + 1) / 2)]
      printf "%-50s %12.0f tasks/s (median of %d)\n", "batch submission across " replicas " replicas:", m, runs
      printf "%-50s %12.2f (goal >= 1.00: %s)\n", "ratio to " bar " tasks/s:", m / bar, (m >= bar ? "met" : "NOT met")
    }'
}

# --- get: a task through each replica against nginx ------------------------------------------------
bench_get() {
  local session="bench.get.$run_id" status n lowest=""
  status=$(curl -s -o "$work/put.body" -w '%{http_code}' -X PUT -H "$auth" -H 'Content-Type: application/json' \
    -d '{"mode": "background"}' "${replica_apis[0]}/v1/sessions/$session")
  if [ "$status" != 201 ]; then
    log "creating $session: $status $(cat "$work/put.body")"
    exit 1
  fi
  completed_download "${replica_apis[0]}" "$session" t1 "$origin/origin.bin"
  for n in "${!replica_apis[@]}"; do
    versus_nginx "GET …/tasks/{task} on replica $((n + 1))" "${replica_apis[$n]}/v1/sessions/$session/tasks/t1"
    replicas_alive
    lowest=$(awk -v a="$ratio" -v b="${lowest:-$ratio}" 'BEGIN { print (a < b ? a : b) }')
  done
  awk -v r="$lowest" 'BEGIN {
    printf "%-50s %12.2f (goal >= 0.50: %s)\n", "lowest ratio over the replicas:", r, (r >= 0.5 ? "met" : "NOT met")
  }'
}

# --- takeover: kill -9 the replica running transfers -----------------------------------------------
bench_takeover() {
  if [ "$REPLICAS" -lt 2 ] || [ "$DATABASE" = sqlite ]; then
    log "takeover: skipped (it needs two replicas or more on one database)"
    return 0
  fi
  log "takeover: $DOWNLOADS slow downloads, kill -9 of the replica running them, lease timeout $LEASE s"
  local args=() n
  for n in "${!replica_apis[@]}"; do args+=(--api "${replica_apis[$n]}" --pid "${replica_pids[$n]}"); done
  python3 bench/cluster.py takeover "${args[@]}" --token "$token" --lease-timeout "$LEASE" --downloads "$DOWNLOADS"
}

# --- main ----------------------------------------------------------------------------------------
install_tools nginx wrk curl
[ -z "$DATABASE" ] && install_tools postgresql
ensure_binary
if [ "$DATABASE" != sqlite ] && ! "$BINARY" --help | grep -q -e '--database'; then
  log "$BINARY has no cluster mode (no --database in --help)."
  log "The GET comparison alone, on one transferd on SQLite:"
  log "  BENCH_ONLY=get BENCH_CLUSTER_DATABASE=sqlite BENCH_CLUSTER_REPLICAS=1 $0"
  exit 2
fi
# bench/cluster.py uses the integration tests' origin (requests, crc32c).
want takeover && scripts/install-deps.sh test >&2
bench_setup cluster
trap cluster_cleanup EXIT
run_id=$(date +%s)

echo "transferd cluster bench — $(date -u +%FT%TZ), $(nproc) cores, $REPLICAS replicas, lease timeout $LEASE s"
echo "start:  $(uptime)"
echo "binary: $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"

# nginx: the origin of the tasks (a 4 KiB file) and the static twins of the GET phase.
mkdir -p "$work/www"
chmod 755 "$work/www"
head -c 4096 /dev/urandom >"$work/www/origin.bin"
chmod 644 "$work/www/origin.bin"
start_nginx "        root $work/www;"
origin="http://127.0.0.1:$nport"
wait_for "$origin/origin.bin"

start_database
start_replicas

status=0
want submit && bench_submit
want get && bench_get
want takeover && { bench_takeover || status=$?; }
replicas_alive_after=$(for pid in "${replica_pids[@]}"; do kill -0 "$pid" 2>/dev/null && echo "$pid"; done | wc -l)
echo "replicas still running: $replicas_alive_after of $REPLICAS"
echo "end:    $(uptime)"
exit $status
