#!/usr/bin/env bash
# Instructions per API request of transferd, counted by valgrind's callgrind: deterministic for a
# given binary and input, so unlike requests/s it does not move with the load of a shared machine.
# Use it to see what a change to the request path costs or saves; bench/downloads.sh and
# bench/http.sh measure the real rates (and the kernel time callgrind does not count).
#
# transferd runs under callgrind with a token, on loopback. For each workload the counters are
# zeroed (`callgrind_control -z`), the requests sent one after another over one keep-alive
# connection by bench/drive.py, and the counts dumped (`callgrind_control -d`): the dump's total,
# divided by the requests (or tasks), is the figure printed. It covers every thread of the process
# (HTTP loops, the store writer, SQLite), nothing of the kernel.
#   get      GET /v1/sessions/{id}/tasks/{task} of one (suspended) task, bearer token
#   submit1  POST /v1/sessions/{id}/tasks, one suspended download task per request
#   batch    POST /v1/sessions/{id}/tasks:batch, BATCH tasks per request
#   small    SMALLS downloads of 16 KiB from a local nginx through one tasks:batch of a background
#            session, from the POST until every task is completed (per completed task): the whole
#            life of a small task — submission, transfer, files, store, events
#
# Usage: bench/instructions.sh
# Environment: GETS [2000], POSTS [500], BATCHES [4], BATCH [1000], SMALLS [500], TRANSFERD_BINARY,
#   KEEP=DIR to keep the dumps there (callgrind.get, …) for `callgrind_annotate --inclusive=yes`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

GETS=${GETS:-2000}
POSTS=${POSTS:-500}
BATCHES=${BATCHES:-4}
BATCH=${BATCH:-1000}
SMALLS=${SMALLS:-500}
DRIVE=(python3 "$PWD/bench/drive.py")

install_tools valgrind binutils curl nginx
ensure_binary
bench_setup instructions

echo "transferd instructions per request (callgrind) — $(date -u +%FT%TZ), binary $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"
# valgrind 3.19 cannot read the DWARF 5 debug info swiftc writes; the symbol table is enough.
objcopy --strip-debug "$BINARY" "$work/transferd"
BINARY=$work/transferd
transferd_prefix=(valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" --dump-instr=no)
mkdir -p "$work/out"
wait_seconds=120 start_transferd --allow-path "$work/out"  # start-up under valgrind is slow

# Total Ir of the newest dump.
measure() {  # label count command...: zero, run, dump; prints "label instructions/unit"
  local label=$1 count=$2; shift 2
  callgrind_control -z "$transferd_pid" >/dev/null 2>&1
  "$@" >/dev/null
  callgrind_control -d "$label" "$transferd_pid" >/dev/null 2>&1
  local dump
  dump=$(ls -t "$work"/callgrind.out* | head -n1)
  awk -v n="$count" -v l="$label" '/^summary:/ { printf "%-8s %12.0f instructions per unit (%d units)\n", l, $2 / n, n }' "$dump"
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$dump" "$KEEP/callgrind.$label"; fi
}

curl -sf -X PUT -H "$auth" -d '{"mode":"background"}' "$api/v1/sessions/bench.instr" >/dev/null
task=$(curl -sf -X POST -H "$auth" -d '{"kind":"download","start":false,"request":{"url":"http://127.0.0.1:9/x"}}' \
  "$api/v1/sessions/bench.instr/tasks" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
# One of each first, so that caches, statements and lazily built tables are warm.
"${DRIVE[@]}" replay --api "$api" --token "$token" --get "/v1/sessions/bench.instr/tasks/$task" --count 10 >/dev/null
"${DRIVE[@]}" replay --api "$api" --token "$token" --post /v1/sessions/bench.instr/tasks --count 10 >/dev/null
"${DRIVE[@]}" replay --api "$api" --token "$token" --post /v1/sessions/bench.instr/tasks:batch --batch "$BATCH" --count 1 >/dev/null

measure get "$GETS" "${DRIVE[@]}" replay --api "$api" --token "$token" \
  --get "/v1/sessions/bench.instr/tasks/$task" --count "$GETS"
measure submit1 "$POSTS" "${DRIVE[@]}" replay --api "$api" --token "$token" \
  --post /v1/sessions/bench.instr/tasks --count "$POSTS"
measure batch $((BATCHES * BATCH)) "${DRIVE[@]}" replay --api "$api" --token "$token" \
  --post /v1/sessions/bench.instr/tasks:batch --batch "$BATCH" --count "$BATCHES"

# The small files, served by nginx; a warm-up batch first, in a session of its own.
mkdir -p "$work/origin/small"
python3 - "$work/origin/small" "$SMALLS" >"$work/list" <<'EOF2'
import hashlib, os, sys
directory, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    data = os.urandom(16384)
    with open(f"{directory}/s{i:04d}.bin", "wb") as f:
        f.write(data)
    print(f"ORIGIN/small/s{i:04d}.bin\ts{i:04d}.bin\t16384\t{hashlib.sha256(data).hexdigest()}")
EOF2
start_nginx "        root $work/origin;"
sed -i "s|^ORIGIN|http://127.0.0.1:$nport|" "$work/list"
wait_for "http://127.0.0.1:$nport/small/s0000.bin"
small() {  # session
  "${DRIVE[@]}" download --api "$api" --token "$token" --session "$1" --mode background \
    --config '{"max_concurrent_tasks":64,"max_connections_per_host":64}' --list "$work/list" --dest "$work/out/$1"
}
mkdir -p "$work/out/bench.small.warm" "$work/out/bench.small"
small bench.small.warm >/dev/null
measure small "$SMALLS" small bench.small
transferd_alive
