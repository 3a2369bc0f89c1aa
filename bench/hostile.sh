#!/usr/bin/env bash
# Hostile input against one transferd (bars: a 1 MiB JSON body of any shape parses in under 50 ms,
# and no hostile client makes a well-behaved one wait): the well-behaved client's p50/p99 latency
# of a task GET, quiet and while bench/hostile.py's attackers run (slowloris heads, slow bodies,
# oversized heads, 1 MiB JSON bodies of hostile shapes, pipelined floods), and how long transferd
# takes to answer each JSON shape. All on loopback; every loop stops after BENCH_SECONDS.
#
# Usage: bench/hostile.sh
# Environment: BENCH_SECONDS [10] (each phase), TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

SECONDS_EACH=${BENCH_SECONDS:-10}
install_tools curl
ensure_binary
bench_setup hostile
start_transferd
session=bench.hostile
# One attempt a task: the task below fails at once instead of after four retries.
curl -sf -o /dev/null -X PUT -H "$auth" -H 'Content-Type: application/json' \
  -d '{"configuration": {"retry": {"max_attempts": 1}}}' "$api/v1/sessions/$session"
# A task to GET: a data task whose origin refuses the connection completes at once.
curl -sf -o /dev/null -X POST -H "$auth" -H 'Content-Type: application/json' \
  -d '{"kind": "data", "id": "t1", "request": {"url": "http://127.0.0.1:1/"}}' "$api/v1/sessions/$session/tasks"
curl -sf -o /dev/null -H "$auth" "$api/v1/sessions/$session/tasks/t1?wait=10"
log "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $SECONDS_EACH s a phase"
python3 bench/hostile.py "$api" "$token" "$session" "$SECONDS_EACH"
transferd_alive
transferd_summary
