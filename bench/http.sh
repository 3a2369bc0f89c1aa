#!/usr/bin/env bash
# HTTP request rate of transferd against the nginx anchor (bar: at least 0.5× nginx).
#
# Starts, on loopback, transferd with a token and an nginx serving a static JSON file of the same
# size as transferd's `GET /v1` body, then runs the same `wrk` load against each in this run and
# prints both request rates and the ratio transferd/nginx. Goal: at least 0.5.
#
# Usage: bench/http.sh           (from anywhere; `make bench` runs it)
# Environment: THREADS [2], CONNECTIONS [64], DURATION [10s], WARMUP [2s], TRANSFERD_BINARY.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}

install_tools nginx wrk curl
ensure_binary
bench_setup http

TRANSFERD_LOG_LEVEL=info start_transferd
turl="$api/v1"
curl -sf -H "$auth" "$turl" -o "$work/v1.body"
size=$(wc -c <"$work/v1.body")

# nginx with a static JSON file of the same size.
mkdir -p "$work/www"
chmod 755 "$work/www"
json_of_size "$size" "$work/www/v1.json"
start_nginx "        root $work/www;"
nurl="http://127.0.0.1:$nport/v1.json"
wait_for "$nurl"
nsize=$(curl -sf "$nurl" | wc -c)
if [ "$nsize" != "$size" ]; then
  log "nginx serves $nsize bytes, transferd $size"
  exit 1
fi

log "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, ${size}-byte JSON body, $(nproc) cores"
run_wrk "$THREADS" "$CONNECTIONS" "$WARMUP" "$turl" -H "$auth" >/dev/null
run_wrk "$THREADS" "$CONNECTIONS" "$WARMUP" "$nurl" >/dev/null
read -r transferd_rps _ <<<"$(run_wrk "$THREADS" "$CONNECTIONS" "$DURATION" "$turl" -H "$auth")"
read -r nginx_rps _ <<<"$(run_wrk "$THREADS" "$CONNECTIONS" "$DURATION" "$nurl")"

awk -v t="$transferd_rps" -v n="$nginx_rps" 'BEGIN {
  ratio = t / n
  printf "transferd GET /v1 (bearer): %12.0f requests/s\n", t
  printf "nginx static file:          %12.0f requests/s\n", n
  printf "ratio transferd/nginx:      %12.2f (goal >= 0.50: %s)\n", ratio, (ratio >= 0.5 ? "met" : "NOT met")
}'
