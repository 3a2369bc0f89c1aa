#!/usr/bin/env bash
# Completion webhook latency (issue 5): a `task.completed` webhook
# reaches a local receiver within 50 ms (p99) of the transfer's end.
#
# On loopback, nginx (Debian) is the origin — a small file — and the receiver (`POST /webhook`
# answers 204), logging each request with `$msec` after its response went out. transferd
# downloads the file BENCH_COUNT times into an --allow-path directory for a background session
# whose delegate is nginx; bench/webhooks.py then takes, for each download, the time from the
# transfer's end to the arrival of its `task.completed` webhook:
#   from origin   nginx's $msec for the download (its last byte) — the bar;
#   from task     the task's completed_at: the delivery path alone.
# Two regimes:
#   paced   one POST per download at BENCH_RATE a second, every event pushed (4–5 webhooks a
#           download, delivered in order): the bar applies here;
#   burst   all downloads in one tasks:batch, only task.completed pushed: shows how long one
#           session's in-order delivery queue gets when a thousand transfers end together.
# Signatures are not checked here (nginx cannot); the integration tests check them with the
# `standardwebhooks` package.
#
# Usage: bench/webhooks.sh
# Environment: BENCH_COUNT [1000], BENCH_RATE [100], BENCH_SIZE [16384] (bytes per download),
#   BENCH_ONLY [paced,burst], TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

COUNT=${BENCH_COUNT:-1000}
RATE=${BENCH_RATE:-100}
SIZE=${BENCH_SIZE:-16384}
ONLY=${BENCH_ONLY:-paced,burst}
BAR_MS=50

install_tools nginx curl
ensure_binary
bench_setup hooks

# nginx, logging when each response ended ($msec, after the last byte was sent) and, for webhooks,
# which event it was.
mkdir -p "$work/www" "$work/files"
head -c "$SIZE" /dev/urandom >"$work/www/small.bin"
chmod 755 "$work/www"; chmod 644 "$work/www/small.bin"
start_nginx "        root $work/www;
        access_log $work/access.log ended;
        location = /webhook { return 204; }" "    log_format ended '\$msec \$request_uri \$http_webhook_id';"
wait_for "http://127.0.0.1:$nport/small.bin"
start_transferd --allow-path "$work/files"
tport=${api##*:}

echo "transferd webhook latency bench — $(date -u +%FT%TZ), $(nproc) cores, $COUNT downloads of $SIZE bytes"
echo "start: $(uptime)"
printf '%-7s %6s | %-29s | %-29s | %s\n' "" "" "from origin's last byte (ms)" "from task completed_at (ms)" ""
printf '%-7s %6s | %6s %6s %6s %7s | %6s %6s %6s %7s | %s\n' regime tasks p50 p90 p99 max p50 p90 p99 max "webhooks, seconds"
verdict=""
for regime in paced burst; do
  [[ ",$ONLY," == *",$regime,"* ]] || continue
  flags=(--rate "$RATE"); [ "$regime" = burst ] && flags=(--burst)
  read -r label n o50 o90 o99 omax t50 t90 t99 tmax hooks seconds < <(
    python3 bench/webhooks.py --api "http://127.0.0.1:$tport" --token "$token" --origin "http://127.0.0.1:$nport" \
      --access-log "$work/access.log" --dest "$work/files" --count "$COUNT" --label "$regime" "${flags[@]}")
  printf '%-7s %6s | %6s %6s %6s %7s | %6s %6s %6s %7s | %s, %s\n' \
    "$label" "$n" "$o50" "$o90" "$o99" "$omax" "$t50" "$t90" "$t99" "$tmax" "$hooks" "$seconds"
  if [ "$regime" = paced ]; then
    verdict=$(awk -v p="$o99" -v bar="$BAR_MS" 'BEGIN { print (p <= bar ? "meets" : "MISSES") }')
    verdict="paced p99 $o99 ms from the origin's last byte: $verdict the bar (≤ $BAR_MS ms)"
  fi
done
echo
[ -n "$verdict" ] && echo "$verdict"
transferd_summary
echo "end:   $(uptime)"
