#!/usr/bin/env bash
# What a small task costs transferd, against curl measured in the same run. The bars, in short:
#   rate     2,000 downloads of 16 KiB through one `tasks:batch`, 64 at once, from a local nginx:
#            an ephemeral session at least as fast as `curl --parallel --parallel-max 64` on the
#            same list; a background session (files and records durable when it says done) at
#            least as fast as that curl followed by `sync`;
#   cpu      transferd's CPU (user + system, every thread, all of its bookkeeping) per file at most
#            1.5x curl's CPU per file (curl's own rusage) — judged on the background session —
#            and flat as history grows: the 10th batch of 2,000 costs what the 1st did (within
#            BENCH_SMALL_FLAT, 1.2x, for the noise of a shared machine);
#   database at most 2,000 bytes of database (SQLite file + WAL growth) per completed task;
#   memory   resident memory after 100,000 completed (and retained) tasks under 64 MiB;
#   webhooks 1,000 tasks of one session completing together reach a local receiver (nginx) with
#            p99 under 50 ms when the delegate allows max_in_flight 16 ("not supported" when the
#            server refuses that field), and all within 2 s in strict seq order with the default
#            of one at a time.
#
# Phases (history first), each on loopback with nginx serving the same 2,000 files of 16 KiB:
#   1. rates and CPU: BENCH_RUNS runs after one warm-up, the four contenders taking turns in a
#      rotating order (curl; curl then sync; transferd ephemeral; transferd background), each into
#      an emptied directory after a sync. transferd's CPU is read from /proc/<pid>/stat around
#      each timed section (from the POST until every task is completed), curl's from wait4.
#      With BENCH_SMALL_STRACE=1, one more background batch runs under `strace -c -f -p` (slow:
#      not timed) for the system calls per task.
#   2. webhook bursts: 1,000 downloads in one tasks:batch, only task.completed pushed to nginx;
#      latency from each download's last byte to its webhook's arrival, both from nginx's log.
#   3. history (run first): a fresh transferd (empty data directory) runs BENCH_SMALL_HISTORY /
#      2,000 batches of the same list, each in a new background session; per batch its CPU, the
#      database's size and transferd's RSS. The files go to BENCH_SMALL_HISTORY_OUT (/dev/shm)
#      and are deleted after each batch; the tasks remain (the database stays on disk, in the
#      scratch directory under /tmp). Not on ext4: there, creating files within a minute or more
#      of deleting others costs several times the kernel CPU (inode allocation skips recently
#      deleted inodes, `recently_deleted` in ext4's ialloc.c, on a file system without a journal),
#      so each batch would pay for the deletions of the one before and batch 1 for whatever ran
#      before the script: that is the file system's history, not transferd's. Phases 1 and 2 then
#      run in a second fresh transferd, every contender after the same deletions.
# Every run is verified: outputs of the right size; transferd's tasks completed with the source's
# size and sha256, a sample of files hashed on disk.
#
# Usage: bench/small.sh            (about 2-3 minutes with the defaults on 2 busy cores)
#        BENCH_SMALL_HISTORY=20000 BENCH_RUNS=2 bench/small.sh    (a quick run)
#        MALLOC_ARENA_MAX=2 bench/small.sh  (transferd inherits the environment)
# Environment:
#   BENCH_RUNS [3]                 measured runs of phase 1 (medians reported)
#   BENCH_SMALL_FILES [2000]       files per batch (the bars are for 2,000)
#   BENCH_SMALL_PARALLEL [64]      parallelism for curl and for the sessions
#   BENCH_SMALL_HISTORY [100000]   completed tasks of phase 3 (batches of BENCH_SMALL_FILES)
#   BENCH_SMALL_HOOKS [1000]       downloads per webhook burst (0: skip phase 2)
#   BENCH_SMALL_STRACE [0]         1: count system calls over one batch
#   BENCH_SMALL_FLAT [1.2]         tolerance of the flatness check
#   BENCH_ONLY [rate,hooks,history]
#   BENCH_OUT [/tmp]               parent of the output directories of phases 1-2 (same for all)
#   BENCH_SMALL_HISTORY_OUT [/dev/shm]  parent of phase 3's output directory
#   BENCH_DATA [/tmp/transferd-bench-data]  the source files (small/), generated once and kept
#   TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

RUNS=${BENCH_RUNS:-3}
FILES=${BENCH_SMALL_FILES:-2000}
PARALLEL=${BENCH_SMALL_PARALLEL:-64}
HISTORY=${BENCH_SMALL_HISTORY:-100000}
HOOKS=${BENCH_SMALL_HOOKS:-1000}
STRACE=${BENCH_SMALL_STRACE:-0}
FLAT=${BENCH_SMALL_FLAT:-1.2}
ONLY=${BENCH_ONLY:-rate,hooks,history}
OUT_PARENT=${BENCH_OUT:-/tmp}
HISTORY_PARENT=${BENCH_SMALL_HISTORY_OUT:-/dev/shm}
DATA=${BENCH_DATA:-/tmp/transferd-bench-data}
KIB16=16384
SMALL=(python3 "$PWD/bench/small.py")
DRIVE=(python3 "$PWD/bench/drive.py")
SESSION_CONFIG="{\"max_concurrent_tasks\":$PARALLEL,\"max_connections_per_host\":$PARALLEL}"

want() { [[ ",$ONLY," == *",$1,"* ]]; }

if [ "$FILES" -gt 2000 ] || [ "$FILES" -lt 1 ]; then log "BENCH_SMALL_FILES must be 1..2000"; exit 2; fi

# --- source data: the 2,000 files of downloads.sh's small workload, with their checksums --------
generate_data() {
  mkdir -p "$DATA/small"
  if [ "$(find "$DATA/small" -name 's*.bin' -size ${KIB16}c | wc -l)" != 2000 ]; then
    log "generating $DATA/small (2,000 x 16 KiB)"
    python3 - "$DATA/small" "$KIB16" <<'EOF'
import os, sys
directory, size = sys.argv[1], int(sys.argv[2])
for i in range(2000):
    with open(f"{directory}/s{i:04d}.bin", "wb") as f:
        f.write(os.urandom(size))
EOF
    rm -f "$DATA/small.sha256"
  fi
  if [ ! -s "$DATA/small.sha256" ] || [ "$DATA/small" -nt "$DATA/small.sha256" ]; then
    (cd "$DATA" && find small -name 's*.bin' | sort | xargs sha256sum >small.sha256.tmp && mv small.sha256.tmp small.sha256)
  fi
  chmod 755 "$DATA" "$DATA/small"
  chmod 644 "$DATA"/small/*.bin
}

make_list() {  # -> url<TAB>name<TAB>size<TAB>sha256 lines for the first FILES files (drive.py's list form)
  head -n "$FILES" "$DATA/small.sha256" |
    awk -v o="$origin" -v s=$KIB16 '{ n = split($2, p, "/"); printf "%s/%s\t%s\t%s\t%s\n", o, $2, p[n], s, $1 }' >"$work/list"
  awk -F'\t' -v d="$out/curl" '{ printf "url = \"%s\"\noutput = \"%s/%s\"\n", $1, d, $2 }' "$work/list" >"$work/list.curl"
}

record() { echo "$*" >>"$work/results"; }

fresh_dir() {  # empty a contender's output directory and flush dirty pages outside the timed section
  rm -rf "${out:?}/$1"
  mkdir -p "$out/$1"
  sync
}

check_outputs() {  # dir: FILES files of 16 KiB
  local got
  got=$(find "$1" -maxdepth 1 -type f -size ${KIB16}c | wc -l)
  if [ "$got" != "$FILES" ]; then log "$1 holds $got files of $KIB16 bytes, expected $FILES"; exit 1; fi
}

# --- phase 1: rates and CPU ----------------------------------------------------------------------
transferd_batch() {  # mode session -> "seconds cpu_seconds"
  local t cpu
  t=$("${DRIVE[@]}" download --api "$api" --token "$token" --session "$2" --mode "$1" --config "$SESSION_CONFIG" \
        --list "$work/list" --dest "$out/curl" --sample 20 --seed "$RANDOM" \
        --cpu-pid "$transferd_pid" --cpu-out "$work/cpu")
  transferd_alive
  cpu=$(awk 'NR == 1 { print $2 }' "$work/cpu")
  # Where it went, by thread name (ms a task), for the log: the curl loops, the file-work and
  # commit queues, the store's writer, the HTTP threads.
  log "             threads: $(awk -v n="$FILES" 'NR > 1 && NR <= 8 { printf "%s %.3f  ", $1, $2 * 1000 / n }' "$work/cpu")"
  echo "$t $cpu"
}

bench_rate() {
  log "rates: $FILES x 16 KiB, $PARALLEL at once, $RUNS runs + 1 warm-up  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  local tools=(curl curl+sync ephemeral background) r i tool t cpu curlcmd
  curlcmd="curl -s --no-progress-meter --parallel --parallel-max $PARALLEL -K $work/list.curl"
  for r in $(seq 0 "$RUNS"); do
    for i in 0 1 2 3; do
      tool=${tools[$(( (i + r) % 4 ))]}
      # Everyone writes into the same directory name, emptied and synced before each run.
      fresh_dir curl
      case $tool in
        curl) read -r t cpu < <("${SMALL[@]}" run "$curlcmd") ;;
        curl+sync) read -r t cpu < <("${SMALL[@]}" run "$curlcmd && sync") ;;
        ephemeral|background) read -r t cpu < <(transferd_batch "$tool" "bench.small.$tool.r$r") ;;
      esac
      check_outputs "$out/curl"
      local line
      line=$(printf '%-10s %7.3fs %7.0f files/s  cpu %6.3fs %6.3f ms/file' "$tool" "$t" \
               "$(rate "$FILES" "$t")" "$cpu" "$(awk -v c="$cpu" -v n="$FILES" 'BEGIN { print c * 1000 / n }')")
      if [ "$r" = 0 ]; then log "  warm-up $line"; continue; fi
      log "  run $r   $line"
      record "rate.$tool" "$(rate "$FILES" "$t")"
      [ "$tool" = curl+sync ] || record "cpu.$tool" "$cpu"
    done
  done
  rm -rf "${out:?}/curl"
  if [ "$STRACE" = 1 ]; then
    log "strace -c -f over one more background batch (not timed)"
    fresh_dir curl
    strace -c -f -p "$transferd_pid" -o "$work/strace.txt" 2>"$work/strace.err" &
    local strace_pid=$!
    sleep 1
    transferd_batch background bench.small.strace >/dev/null
    kill -INT "$strace_pid"
    wait "$strace_pid" || true
    check_outputs "$out/curl"
    # Columns: % time, seconds, usecs/call, calls, [errors], syscall.
    awk '$1 ~ /^[0-9.]+$/ && NF >= 5 { print "strace", $NF, $4 }' "$work/strace.txt" >>"$work/results"
    record strace _tasks "$FILES"
    rm -rf "${out:?}/curl"
  fi
}

# --- phase 2: webhook bursts ---------------------------------------------------------------------
bench_hooks() {
  log "webhook bursts: $HOOKS downloads in one tasks:batch  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  mkdir -p "$out/hooks"
  local m text
  for m in 16 1; do
    text=$("${SMALL[@]}" burst --api "$api" --token "$token" --origin "$origin" --access-log "$work/access.log" \
             --dest "$out/hooks" --label "m$m" --count "$HOOKS" --max-in-flight "$m")
    transferd_alive
    if [ "$text" = unsupported ]; then
      log "  max_in_flight $m: not supported"
    else
      read -r _ p50 p90 p99 mx span order <<<"$text"
      log "  max_in_flight $m: p50 $p50 p90 $p90 p99 $p99 max $mx ms; first end to last webhook ${span} ms; in order: $order"
    fi
    record "hook.$m" "$text"
    rm -rf "${out:?}/hooks"/*
  done
}

# --- phase 3: history ----------------------------------------------------------------------------
bench_history() {
  local batches=$(( (HISTORY + FILES - 1) / FILES ))
  log "history: $batches batches of $FILES in a fresh transferd  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  mkdir -p "$HISTORY_PARENT"
  hout=$(mktemp -d "$HISTORY_PARENT/transferd-bench-small-history.XXXXXX")
  chmod 755 "$hout"
  cleanup_paths+=("$hout")
  log "  outputs in $hout ($(df -T "$hout" | awk 'NR == 2 { print $2 }')), deleted after each batch"
  start_transferd --allow-path "$hout"
  sleep 1
  db_start=$(( $(stat -c %s "$work/data/transferd.sqlite" 2>/dev/null || echo 0) + \
               $(stat -c %s "$work/data/transferd.sqlite-wal" 2>/dev/null || echo 0) ))
  log "  fresh: database $db_start bytes, RSS $(awk '/VmRSS/ { print $2 }' "/proc/$transferd_pid/status") KiB"
  "${SMALL[@]}" history --api "$api" --token "$token" --list "$work/list" --dest "$hout" --data "$work/data" \
    --out "$work/history" --pid "$transferd_pid" --batches "$batches" --parallel "$PARALLEL"
  transferd_alive
  transferd_summary >&2
  stop_transferd
  rm -rf "${work:?}/data"
}

# --- main ----------------------------------------------------------------------------------------
tools=(nginx curl)
[ "$STRACE" = 1 ] && tools+=(strace)
install_tools "${tools[@]}"
ensure_binary
generate_data
bench_setup small
mkdir -p "$OUT_PARENT"
out=$(mktemp -d "$OUT_PARENT/transferd-bench-small.XXXXXX")
cleanup_paths+=("$out")
: >"$work/results"
: >"$work/history"
db_start=0

echo "transferd small-task cost bench — $(date -u +%FT%TZ), $(nproc) cores, $FILES x 16 KiB, $PARALLEL at once"
echo "start:  $(uptime)"
echo "binary: $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"
echo "output: $out ($(df -T "$out" | awk 'NR == 2 { print $2 }')); tools: $(curl --version | head -n1 | cut -d' ' -f1-2), $("$NGINX" -v 2>&1 | cut -d' ' -f3)"
[ -n "${MALLOC_ARENA_MAX:-}" ] && echo "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX"

# nginx: the files; /burst/ the same files, logged with the time their last byte went out; the
# webhook receiver (204), logged with each webhook's id.
start_nginx "        root $DATA;
        location /burst/ { alias $DATA/small/; access_log $work/access.log ended; }
        location = /webhook { access_log $work/access.log ended; return 204; }" \
  "    log_format ended '\$msec \$request_uri \$http_webhook_id';"
origin="http://127.0.0.1:$nport"
wait_for "$origin/small/s0000.bin"
make_list

want history && [ "$HISTORY" -gt 0 ] && bench_history
if want rate || { want hooks && [ "$HOOKS" -gt 0 ]; }; then
  start_transferd --allow-path "$out"
  want rate && bench_rate
  want hooks && [ "$HOOKS" -gt 0 ] && bench_hooks
fi

echo
status=0
"${SMALL[@]}" report "$work/results" --history "$work/history" --db-start "$db_start" --files "$FILES" \
  --flat "$FLAT" || status=$?
echo
[ -n "$transferd_pid" ] && transferd_summary
echo "end:    $(uptime)"
exit $status
