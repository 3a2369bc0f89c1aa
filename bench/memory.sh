#!/usr/bin/env bash
# Resident memory of transferd (bars: 10,000 concurrent slow transfers
# in under 1 GiB resident; idle service under 30 MiB), and what each stored task costs.
#
# Read from /proc/<pid>/status (VmRSS = RssAnon + RssFile + RssShmem; VmHWM is the peak):
#   idle        after start, and after a few API calls (a session, a task, stats, metrics);
#   running     BENCH_TRANSFERS downloads at once from a local nginx that sends each the first
#               64 KiB at full speed (so curl's receive buffers are filled, not just allocated) and
#               then drips BENCH_RATE a second (`limit_rate`), so all stay open. They are spread
#               over BENCH_SESSIONS background sessions and over one nginx port per 1,000 (a
#               session allows at most 1,000 connections to one host:port). That all run at once
#               is checked twice: /v1/stats `transfers_running`, and nginx's stub_status counting
#               the responses it is writing. RSS is sampled every second for BENCH_HOLD seconds;
#               then the sessions are invalidated with mode=cancel;
#   stored      in a fresh transferd, BENCH_STORED suspended tasks created through tasks:batch:
#               (RSS after - RSS before) / tasks, and again after a restart (tasks loaded from
#               SQLite rather than created).
# Each running download holds three descriptors in transferd (socket, file, its directory): the
# script raises its descriptor limit, which transferd and nginx inherit, when it may (root).
#
# Usage: bench/memory.sh
# Environment: BENCH_TRANSFERS [10000], BENCH_SESSIONS [4], BENCH_RATE [1k] (nginx limit_rate),
#   BENCH_HOLD [10] (seconds), BENCH_RAMP_MAX [120] (seconds to get all running),
#   BENCH_STORED [100000], BENCH_ONLY [idle,running,stored], TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

N=${BENCH_TRANSFERS:-10000}
SESSIONS=${BENCH_SESSIONS:-4}
RATE=${BENCH_RATE:-1k}
HOLD=${BENCH_HOLD:-10}
RAMP_MAX=${BENCH_RAMP_MAX:-120}
STORED=${BENCH_STORED:-100000}
ONLY=${BENCH_ONLY:-idle,running,stored}
IDLE_BAR_MIB=30
RUNNING_BAR_MIB=1024
PER_HOST=1000  # the most max_connections_per_host allows

want() { [[ ",$ONLY," == *",$1,"* ]]; }

# --- reading memory ------------------------------------------------------------------------------
status_kib() {  # field of /proc/<transferd>/status, in KiB (Threads: a count)
  awk -v f="$1:" '$1 == f { print $2 }' "/proc/$transferd_pid/status"
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

printf_row() { printf '%-34s %9s %9s %9s %9s %8s  %s\n' "$@"; }
header() { printf_row "" "RSS MiB" "anon" "file" "peak" threads ""; }
row() {  # label [rss KiB to show instead of the current one] [note]
  local rss=${2:-$(status_kib VmRSS)}
  printf_row "$1" "$(mib "$rss")" "$(mib "$(status_kib RssAnon)")" "$(mib "$(status_kib RssFile)")" \
    "$(mib "$(status_kib VmHWM)")" "$(status_kib Threads)" "${3:-}"
}

verdict() {  # what kib bar-mib
  awk -v w="$1" -v k="$2" -v b="$3" 'BEGIN {
    printf "%-40s %8.1f MiB  %s the bar (< %d MiB)\n", w, k / 1024, (k / 1024 < b ? "meets" : "MISSES"), b }'
}

# --- the API from the shell ----------------------------------------------------------------------
call() {  # method path [curl args...]: fails unless 2xx; prints the body
  local method=$1 path=$2; shift 2
  curl -sf -X "$method" -H "$auth" -H 'Content-Type: application/json' "$@" "$api$path"
}

json_field() {  # python expression on `d` (the JSON document on stdin)
  python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

# Each running download holds three descriptors in transferd (its socket, its file and that file's
# directory). The limit is raised for this shell, which transferd and nginx inherit, as far as it
# may be; when it cannot cover BENCH_TRANSFERS, fewer run and the figure is projected to N.
FDS_PER_DOWNLOAD=3
fit_fd_limit() {
  local need=$(( FDS_PER_DOWNLOAD * N + 1024 ))
  ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
  R=$N
  if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
    R=$(( ($(ulimit -n) - 1024) / FDS_PER_DOWNLOAD ))
    log "the descriptor limit is $(ulimit -n) (hard), and $N downloads need $need: running $R" \
        "and projecting to $N (raise the hard limit, e.g. as root with CAP_SYS_RESOURCE, to measure $N)"
  fi
}

# --- workloads -----------------------------------------------------------------------------------
idle_calls() {  # a few API calls of each kind, none leaving work behind
  call GET /v1 >/dev/null
  call PUT /v1/sessions/bench.idle -d '{"mode":"background"}' >/dev/null
  local id
  id=$(call POST /v1/sessions/bench.idle/tasks \
         -d '{"kind":"download","start":false,"request":{"url":"http://127.0.0.1:9/idle.bin"}}' | json_field 'd["id"]')
  call GET "/v1/sessions/bench.idle/tasks/$id" >/dev/null
  call GET /v1/sessions/bench.idle/tasks >/dev/null
  call GET /v1/sessions/bench.idle/events >/dev/null
  call DELETE "/v1/sessions/bench.idle/tasks/$id" >/dev/null
  call GET /v1/stats >/dev/null
  curl -sf "$api/metrics" >/dev/null
}

bench_idle() {
  start_transferd
  sleep 2
  row "idle, just started"
  local started
  started=$(status_kib VmRSS)
  idle_calls
  sleep 1
  row "idle, after a few API calls"
  idle_rss=$(( started > $(status_kib VmRSS) ? started : $(status_kib VmRSS) ))
  stop_transferd
}

# nginx on one port per PER_HOST transfers, each download dripping after its first 64 KiB, with
# stub_status to count what it is sending.
start_drip_origin() {
  local ports=$(( (R + PER_HOST - 1) / PER_HOST )) listens="" i
  mkdir -p "$work/www"
  chmod 755 "$work/www"
  head -c $(( 4 << 20 )) /dev/urandom >"$work/www/drip.bin"
  chmod 644 "$work/www/drip.bin"
  nginx_connections=$(( R + 256 ))
  origin_ports=()
  for i in $(seq 2 "$ports"); do
    origin_ports+=("$(free_port)")
    listens+="        listen 127.0.0.1:${origin_ports[-1]};"$'\n'
  done
  start_nginx "$listens        root $work/www;
        open_file_cache max=16;
        limit_rate_after 64k;
        limit_rate $RATE;
        location = /status { stub_status; limit_rate 0; }"
  origin_ports=("$nport" "${origin_ports[@]}")
  wait_for "http://127.0.0.1:$nport/status"
}

nginx_writing() {  # responses nginx is sending, the status request itself not counted
  curl -s "http://127.0.0.1:$nport/status" | awk '/Writing:/ { print $4 - 1 }'
}

stats() { call GET /v1/stats | json_field "$1"; }

submit_drips() {  # N downloads over SESSIONS sessions, port by port within each, 1,000 per batch
  local per=$(( (R + SESSIONS - 1) / SESSIONS )) s
  for s in $(seq 0 $(( SESSIONS - 1 ))); do
    call PUT "/v1/sessions/bench.drip.$s" \
      -d "{\"mode\":\"background\",\"configuration\":{\"max_concurrent_tasks\":$per,\"max_connections_per_host\":$PER_HOST}}" >/dev/null
  done
  python3 - "$work" "$R" "$SESSIONS" "${origin_ports[@]}" <<'EOF'
import json, sys
work, n, sessions, ports = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
tasks = [[] for _ in range(sessions)]
for i in range(n):
    port = ports[(i // sessions) % len(ports)]
    tasks[i % sessions].append({"kind": "download", "request": {"url": f"http://127.0.0.1:{port}/drip.bin"}})
for s, mine in enumerate(tasks):
    for k in range(0, len(mine), 1000):
        with open(f"{work}/batch.{s}.{k // 1000:03d}.json", "w") as f:
            json.dump({"tasks": mine[k:k + 1000]}, f)
EOF
  local file
  for file in "$work"/batch.*.json; do
    s=${file#"$work/batch."}; s=${s%%.*}
    call POST "/v1/sessions/bench.drip.$s/tasks:batch" --data-binary "@$file" -o /dev/null
  done
}

bench_running() {
  start_drip_origin
  local extra=()
  [ "$R" -gt 10000 ] && extra=(--max-running-transfers "$R")
  start_transferd "${extra[@]}"
  sleep 1
  row "idle, before the downloads"
  local t0=$EPOCHREALTIME running=0 writing=0 waited before
  before=$(status_kib VmRSS)
  submit_drips
  # Until every download runs in transferd and nginx is sending every response.
  for _ in $(seq $(( RAMP_MAX * 2 ))); do
    running=$(stats 'd["transfers_running"]')
    writing=$(nginx_writing)
    [ "$running" -ge "$R" ] && [ "$writing" -ge "$R" ] && break
    transferd_alive
    sleep 0.5
  done
  waited=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  if [ "$running" -lt "$R" ] || [ "$writing" -lt "$R" ]; then
    log "after ${waited}s: $running transfers running in transferd, nginx sending $writing responses (want $R)"
    tail -n 5 "$work/transferd.log" >&2
    exit 1
  fi
  row "$R running (all up after ${waited}s)"
  local peak=0 rss i low=$R
  for i in $(seq "$HOLD"); do
    sleep 1
    rss=$(status_kib VmRSS)
    [ "$rss" -gt "$peak" ] && peak=$rss
    running=$(stats 'd["transfers_running"]')
    [ "$running" -lt "$low" ] && low=$running
  done
  writing=$(nginx_writing)
  row "$R running, highest of ${HOLD}s" "$peak" \
    "(fewest running $low; nginx writing $writing; down $(stats 'round(d["bytes_per_second"]["down"] / 1e6, 1)') MB/s)"
  per_transfer=$(( (peak - before) * 1024 / R ))
  running_rss=$(( before + (peak - before) * N / R ))
  echo "  $per_transfer bytes a running download over idle"
  local s
  for s in $(seq 0 $(( SESSIONS - 1 ))); do
    call DELETE "/v1/sessions/bench.drip.$s?mode=cancel" >/dev/null
  done
  t0=$EPOCHREALTIME
  for _ in $(seq 120); do
    [ "$(stats 'd["tasks"]["running"] + d["tasks"]["canceling"]')" = 0 ] && break
    sleep 0.5
  done
  sleep 2
  row "cancelled ($(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')s)"
  transferd_alive
  transferd_summary >&2
  stop_transferd
  kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null || true
  nginx_pid=""
  rm -rf "${work:?}/data"
}

bench_stored() {
  start_transferd
  sleep 1
  local before after restarted text tasks
  before=$(status_kib VmRSS)
  row "before creating tasks"
  text=$(python3 bench/drive.py submit-batch --api "$api" --token "$token" --session bench.stored \
           --url "http://127.0.0.1:9/stored.bin" --total "$STORED" --batch 5000 --concurrency 2 --max-seconds 60)
  read -r _ tasks _ <<<"$text"
  sleep 1
  after=$(status_kib VmRSS)
  row "$tasks suspended tasks created" "" "$(per_task $(( after - before )) "$tasks")"
  stop_transferd
  start_transferd
  sleep 1
  restarted=$(status_kib VmRSS)
  row "the same after a restart" "" "$(per_task $(( restarted - before )) "$tasks")"
  stop_transferd
}

per_task() {  # kib tasks [words]
  awk -v k="$1" -v n="$2" -v w="${3:-}" 'BEGIN { printf "%.0f bytes a task %s", k * 1024 / n, w }'
}

# --- main ----------------------------------------------------------------------------------------
install_tools nginx curl
ensure_binary
fit_fd_limit
bench_setup memory

echo "transferd memory bench — $(date -u +%FT%TZ), $(nproc) cores, $N slow downloads at $RATE/s, $SESSIONS sessions"
echo "start:  $(uptime)"
echo "binary: $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"
header
idle_rss=0
running_rss=""
want idle && bench_idle
want running && bench_running
want stored && bench_stored
echo
[ "$idle_rss" -gt 0 ] && verdict "idle (the larger of the two idle figures)" "$idle_rss" "$IDLE_BAR_MIB"
if [ -n "$running_rss" ]; then
  what="$N slow transfers running"
  [ "$R" -lt "$N" ] && what="$N slow transfers (projected from $R)"
  verdict "$what" "$running_rss" "$RUNNING_BAR_MIB"
fi
echo "end:    $(uptime)"
