#!/usr/bin/env bash
# Download throughput, small-file rate, task submission rate and task GET rate of transferd against
# anchors measured in the same run (issue 3; bars: a 1 GiB download and 16×64 MiB at once at least
# 1.0× curl and faster than aria2c, 2,000×16 KiB at least 1.0× `curl --parallel`, 3,000 task
# submissions/s one by one and 20,000/s batched, task GET at least 0.5× nginx).
#
# On loopback, with a local nginx as the origin, for the same files into the same kind of output
# directory (same filesystem for everyone):
#   single    1 GiB, one download:       curl -o  vs  aria2c -x1 -s1  vs  one transferd download task
#   parallel  16 x 64 MiB, 16 at once:   curl --parallel  vs  aria2c -j16  vs  one tasks:batch of 16
#   small     2,000 x 16 KiB, 64 at once: curl --parallel  vs  aria2c -j64  vs  one tasks:batch of 2,000
#   submit    task creation: one by one (wrk POST, 64 connections) and through tasks:batch
#   get       wrk -t2 -c64 on a completed task's GET  vs  nginx serving a static JSON of that size
# Download times run from the first request (transferd: the POST) until every file is complete
# (transferd: every task `completed`). Each measurement is repeated BENCH_RUNS times after one
# warm-up run, the tools taking turns; the table shows medians, ratios and the bars.
# Every run is checked: all outputs have the right size, transferd's tasks report the source's
# sha256, and a sample of transferd's files is hashed on disk. transferd's CPU time (user + system,
# from /proc) over each timed section is shown per run, by thread name, and its median in the table:
# unlike rates, it barely moves with the load of a shared machine.
#
# Note: transferd fsyncs each download before reporting it complete (its durability promise);
# curl and aria2c do not. On disk that cost is in transferd's time; BENCH_OUT=/dev/shm shows the
# result without disk writeback.
#
# Usage: bench/downloads.sh
# Environment:
#   BENCH_RUNS [3]            measured repetitions per workload (median reported)
#   BENCH_OUT [/tmp]          parent of the output directories, e.g. /dev/shm for tmpfs
#   BENCH_ONLY [all]          comma list of single,parallel,small,submit,get
#   BENCH_DIGESTS [unset]     download.digests of transferd's tasks, comma-separated ("" for none;
#                             unset: the service's default, sha256), e.g. sha256,crc32c
#   TRANSFERD_BINARY [.build/release/transferd]
#   BENCH_DATA [/tmp/transferd-bench-data]  generated source files, kept between runs
#   BENCH_SMALL_PARALLEL [64] parallelism of the 2,000-file workload, for all three tools
#   BENCH_SUBMIT_DURATION [5s], BENCH_BATCH_SIZE [5000], BENCH_BATCH_TOTAL [100000],
#   BENCH_BATCH_CONCURRENCY [2] (connections; one commits while the next is parsed on 2 cores),
#   BENCH_SUBMIT_MAX_SECONDS [30] (no new batch after this long: a slow service cannot stall the bench),
#   BENCH_WRK_DURATION [10s]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

RUNS=${BENCH_RUNS:-3}
OUT_PARENT=${BENCH_OUT:-/tmp}
ONLY=${BENCH_ONLY:-single,parallel,small,submit,get}
DATA=${BENCH_DATA:-/tmp/transferd-bench-data}
SMALL_PARALLEL=${BENCH_SMALL_PARALLEL:-64}
SUBMIT_DURATION=${BENCH_SUBMIT_DURATION:-5s}
BATCH_SIZE=${BENCH_BATCH_SIZE:-5000}
BATCH_TOTAL=${BENCH_BATCH_TOTAL:-100000}
BATCH_CONCURRENCY=${BENCH_BATCH_CONCURRENCY:-2}
SUBMIT_MAX_SECONDS=${BENCH_SUBMIT_MAX_SECONDS:-30}
WRK_DURATION=${BENCH_WRK_DURATION:-10s}
DRIVE=(python3 "$PWD/bench/drive.py")

GIB=1073741824
MIB64=67108864
KIB16=16384

want() { [[ ",$ONLY," == *",$1,"* ]]; }

# --- source data: generated once under /tmp, reused while the sizes are right ---------------------
generate_data() {
  mkdir -p "$DATA/mid" "$DATA/small"
  local changed=0 i
  ensure_random_file "$DATA/big.bin" $GIB && changed=1
  for i in $(seq -w 0 15); do
    ensure_random_file "$DATA/mid/m$i.bin" $MIB64 && changed=1
  done
  if [ "$(find "$DATA/small" -name 's*.bin' -size ${KIB16}c | wc -l)" != 2000 ]; then
    log "generating $DATA/small (2,000 x 16 KiB)"
    python3 - "$DATA/small" "$KIB16" <<'EOF'
import os, sys
directory, size = sys.argv[1], int(sys.argv[2])
for i in range(2000):
    with open(f"{directory}/s{i:04d}.bin", "wb") as f:
        f.write(os.urandom(size))
EOF
    changed=1
  fi
  # Checksums of the sources, to verify what every run wrote.
  if [ $changed = 1 ] || [ ! -s "$DATA/SHA256SUMS" ]; then
    log "hashing the source files"
    (cd "$DATA" && find big.bin mid small -name '*.bin' -type f | sort | xargs sha256sum >SHA256SUMS.tmp \
      && mv SHA256SUMS.tmp SHA256SUMS)
  fi
  # nginx workers run as an unprivileged user when started by root.
  chmod 755 "$DATA" "$DATA/mid" "$DATA/small"
  chmod 644 "$DATA/big.bin" "$DATA"/mid/*.bin "$DATA"/small/*.bin
}

# --- services -------------------------------------------------------------------------------------
out=""
start_origin() {  # nginx serving $DATA, plus the static anchor of the task GET workload
  mkdir -p "$work/www"
  chmod 755 "$work/www"
  start_nginx "        root $DATA;
        # The static anchor of the task GET workload, written once the task JSON's size is known.
        location = /task.json { root $work/www; }"
  origin="http://127.0.0.1:$nport"
  wait_for "$origin/small/s0000.bin"
}

# --- measurement helpers ---------------------------------------------------------------------------
# Raw results, one line each: workload tool run value (a rate: higher is better).
record() {
  echo "$1 $2 $3 $4" >>"$work/results"
}

# Empty a tool's output directory and flush dirty pages outside the timed section, so no run pays
# for the writeback of the one before.
fresh_dir() {
  rm -rf "${out:?}/$1"
  mkdir -p "$out/$1"
  sync
}

check_outputs() {  # dir count size: every tool must have written the right files
  local dir=$1 count=$2 size=$3 got
  got=$(find "$dir" -maxdepth 1 -type f -size "${size}c" | wc -l)
  if [ "$got" != "$count" ]; then
    log "$dir holds $got files of $size bytes, expected $count:"
    find "$dir" -maxdepth 1 -type f -printf '%s\n' | sort | uniq -c | head >&2
    return 1
  fi
}

# Lists derived from SHA256SUMS: url<TAB>name<TAB>size<TAB>sha256 (the form drive.py reads).
make_list() {  # pattern size -> list file path
  local pattern=$1 size=$2 file="$work/list.$RANDOM"
  awk -v o="$origin" -v s="$size" -v p="$pattern" '$2 ~ p {
    n = split($2, parts, "/"); printf "%s/%s\t%s\t%s\t%s\n", o, $2, parts[n], s, $1 }' \
    "$DATA/SHA256SUMS" >"$file"
  echo "$file"
}

curl_config() {  # list dir -> curl -K file (url/output pairs)
  awk -F'\t' -v d="$2" '{ printf "url = \"%s\"\noutput = \"%s/%s\"\n", $1, d, $2 }' "$1" >"$1.curl"
  echo "$1.curl"
}

aria2_input() {  # list -> aria2c -i file (names relative to -d)
  awk -F'\t' '{ printf "%s\n  out=%s\n", $1, $2 }' "$1" >"$1.aria2"
  echo "$1.aria2"
}

# aria2c as quiet as curl -s, writing in place like curl does.
ARIA2=(aria2c -q --console-log-level=error --summary-interval=0 --download-result=hide
       --file-allocation=none --allow-overwrite=true --auto-file-renaming=false -x1 -s1)

# One file-set workload: run 0 is the warm-up (not recorded); the tools take turns in a rotating
# order so that none always runs right after another's writeback or on a cooler cache.
#   name list count size amount config parallel
run_file_workload() {
  local name=$1 list=$2 count=$3 size=$4 amount=$5 config=$6 parallel=$7
  local tools=(curl aria2c transferd) r i tool t sample
  local curlk aria2i
  curlk=$(curl_config "$list" "$out/curl")
  aria2i=$(aria2_input "$list")
  sample=$(( count == 1 ? 1 : (count <= 16 ? 2 : 20) ))
  for r in $(seq 0 "$RUNS"); do
    for i in 0 1 2; do
      tool=${tools[$(( (i + r) % 3 ))]}
      fresh_dir "$tool"
      case $tool in
        curl)
          if [ "$count" = 1 ]; then
            t=$(timed curl -s -o "$out/curl/$(cut -f2 "$list")" "$(cut -f1 "$list")")
          else
            t=$(timed curl -s --parallel --parallel-max "$parallel" -K "$curlk")
          fi ;;
        aria2c)
          t=$(timed "${ARIA2[@]}" -j "$parallel" -d "$out/aria2c" -i "$aria2i") ;;
        transferd)
          t=$("${DRIVE[@]}" download --api "$api" --token "$token" --session "bench.$name.r$r" \
                --config "$config" --list "$list" --dest "$out/transferd" --sample "$sample" --seed "$r" \
                --cpu-pid "$transferd_pid" --cpu-out "$work/cpu" ${BENCH_DIGESTS+--digests "$BENCH_DIGESTS"})
          transferd_alive ;;
      esac
      check_outputs "$out/$tool" "$count" "$size"
      local value
      value=$(rate "$amount" "$t")
      local cpu=""
      if [ "$tool" = transferd ]; then  # its CPU time over the run, and the threads that used most of it
        cpu="  cpu $(awk 'NR == 1 { printf "%s s:", $2 } NR > 1 && NR <= 5 { printf " %s %s", $1, $2 }' "$work/cpu")"
      fi
      if [ "$r" = 0 ]; then
        log "  warm-up   $tool: ${t}s$cpu"
      else
        log "  run $r     $tool: ${t}s  ($value)$cpu"
        record "$name" "$tool" "$r" "$value"
        if [ "$tool" = transferd ]; then record "cpu-$name" transferd "$r" "$(awk 'NR == 1 { print $2 }' "$work/cpu")"; fi
      fi
      rm -rf "${out:?}/$tool"
    done
  done
}

# --- workloads -------------------------------------------------------------------------------------
bench_single() {
  log "single: 1 GiB, one connection  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  local list
  list=$(make_list '^big\.bin$' $GIB)
  # MB/s (10^6 bytes); the default session, one task.
  run_file_workload single "$list" 1 $GIB $(( GIB / 1000000 )) '{}' 1
}

bench_parallel() {
  log "parallel: 16 x 64 MiB, 16 at once  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  local list
  list=$(make_list '^mid/' $MIB64)
  # The session allows all 16 at once to the one host (the default is 6 per host).
  run_file_workload parallel "$list" 16 $MIB64 $(( 16 * MIB64 / 1000000 )) \
    '{"max_concurrent_tasks":16,"max_connections_per_host":16}' 16
}

bench_small() {
  log "small: 2,000 x 16 KiB, $SMALL_PARALLEL at once  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  local list
  list=$(make_list '^small/' $KIB16)
  run_file_workload small "$list" 2000 $KIB16 2000 \
    "{\"max_concurrent_tasks\":$SMALL_PARALLEL,\"max_connections_per_host\":$SMALL_PARALLEL}" "$SMALL_PARALLEL"
}

bench_submit() {
  log "submit: task creation, durable (201 = stored)  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  # Suspended tasks ("start": false) at a tiny file: creation is measured, not transfers.
  cat >"$work/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '{"kind":"download","start":false,"request":{"url":"$origin/small/s0000.bin"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
EOF
  local r session rps n stored text
  for r in $(seq 0 "$RUNS"); do
    session=bench.submit1.r$r
    curl -sf -X PUT -H "$auth" -d '{"mode":"background"}' "$api/v1/sessions/$session" >/dev/null
    text=$(run_wrk 2 64 "$([ "$r" = 0 ] && echo 2s || echo "$SUBMIT_DURATION")" \
             "$api/v1/sessions/$session/tasks" -s "$work/post.lua" --timeout 30s)
    read -r rps n <<<"$text"
    # wrk counts answered requests; the session must store at least that many.
    stored=$("${DRIVE[@]}" count --api "$api" --token "$token" --session "$session")
    if [ "$stored" -lt "$n" ]; then
      log "wrk saw $n tasks created (201) but session $session stores $stored"
      exit 1
    fi
    transferd_alive
    if [ "$r" = 0 ]; then log "  warm-up   one by one: $rps tasks/s"; continue; fi
    log "  run $r     one by one: $rps tasks/s ($n answered, $stored stored)"
    record submit1 transferd "$r" "$rps"
  done
  for r in $(seq 0 "$RUNS"); do
    local total=$BATCH_TOTAL
    [ "$r" = 0 ] && total=$(( BATCH_SIZE * 2 ))
    local secs
    text=$("${DRIVE[@]}" submit-batch --api "$api" --token "$token" --session "bench.submitN.r$r" \
             --url "$origin/small/s0000.bin" --total "$total" --batch "$BATCH_SIZE" \
             --concurrency "$BATCH_CONCURRENCY" --max-seconds "$SUBMIT_MAX_SECONDS")
    read -r rps n secs <<<"$text"
    transferd_alive
    if [ "$r" = 0 ]; then log "  warm-up   batched: $rps tasks/s"; continue; fi
    log "  run $r     batched ($BATCH_SIZE per batch, $BATCH_CONCURRENCY connections): $rps tasks/s ($n tasks stored in ${secs}s)"
    record submitN transferd "$r" "$rps"
  done
}

bench_get() {
  log "get: wrk -t2 -c64 -d$WRK_DURATION on a completed task  [load $(cut -d' ' -f1-3 /proc/loadavg)]"
  local list session id size nsize r rps nrps n text
  list=$(make_list '^small/s0000\.bin$' $KIB16)
  session=bench.get
  mkdir -p "$out/get"
  "${DRIVE[@]}" download --api "$api" --token "$token" --session "$session" --config '{}' \
    --list "$list" --dest "$out/get" --sample 1 --ids-out "$work/get.ids" >/dev/null
  id=$(head -n1 "$work/get.ids")
  local turl="$api/v1/sessions/$session/tasks/$id"
  curl -sf -H "$auth" "$turl" -o "$work/task.body"
  size=$(wc -c <"$work/task.body")
  json_of_size "$size" "$work/www/task.json"
  nsize=$(curl -sf "$origin/task.json" | wc -c)
  if [ "$nsize" != "$size" ]; then log "nginx serves $nsize bytes, the task is $size"; exit 1; fi
  log "  task JSON: $size bytes"
  for r in $(seq 0 "$RUNS"); do
    local d=$WRK_DURATION
    [ "$r" = 0 ] && d=2s
    text=$(run_wrk 2 64 "$d" "$turl" -H "$auth")
    read -r rps n <<<"$text"
    transferd_alive
    text=$(run_wrk 2 64 "$d" "$origin/task.json")
    read -r nrps n <<<"$text"
    if [ "$r" = 0 ]; then log "  warm-up   transferd $rps req/s, nginx $nrps req/s"; continue; fi
    log "  run $r     transferd $rps req/s, nginx $nrps req/s"
    record get transferd "$r" "$rps"
    record get nginx "$r" "$nrps"
  done
}

# --- main ------------------------------------------------------------------------------------------
main() {
  install_tools nginx curl aria2 wrk
  ensure_binary
  generate_data
  bench_setup dl
  mkdir -p "$OUT_PARENT"
  out=$(mktemp -d "$OUT_PARENT/transferd-bench-out.XXXXXX")
  cleanup_paths+=("$out")
  : >"$work/results"

  echo "transferd downloads bench — $(date -u +%FT%TZ), $(nproc) cores, $RUNS runs + 1 warm-up, medians"
  echo "start:  $(uptime)"
  echo "binary: $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"
  echo "output: $out ($(df -T "$out" | awk 'NR == 2 { print $2 }')); transferd data: $work/data"
  echo "tools:  $(curl --version | head -n1 | cut -d' ' -f1-2), $(aria2c --version | head -n1), $(/usr/sbin/nginx -v 2>&1 | cut -d' ' -f3)"

  start_origin
  start_transferd --allow-path "$out"
  want single && bench_single
  want parallel && bench_parallel
  want small && bench_small
  # Task GET before submission: submission leaves hundreds of thousands of stored tasks behind.
  want get && bench_get
  want submit && bench_submit
  transferd_alive

  echo
  "${DRIVE[@]}" report "$work/results"
  echo
  transferd_summary
  echo "end:    $(uptime)"
}

main "$@"
