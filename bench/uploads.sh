#!/usr/bin/env bash
# Upload throughput of transferd against `curl -T` measured in the same run (bar: at least 1.0×
# curl; issue 4): one 1 GiB PUT to a local nginx (WebDAV PUT), three ways, taking turns:
#   curl      curl -T big.bin
#   blob      an upload task from a blob holding the same bytes (stored before the clock starts)
#   file      an upload task from the file itself (`upload.from_file`, under --allow-path)
# Each time runs from the first request (transferd: the task's POST) until the upload is complete
# (transferd: the task `completed` with the origin's 201/204). Every run is checked: the origin
# stored 1 GiB, transferd's task sent exactly that, and the first run of each way is hashed.
#
# nginx writes what it receives to BENCH_SINK (tmpfs by default), so the receiving disk does not
# set the pace for anyone.
#
# Usage: bench/uploads.sh
# Environment:
#   BENCH_RUNS [3]       measured repetitions (median reported), after one warm-up
#   BENCH_SINK [/dev/shm] where nginx stores the uploads
#   BENCH_DATA [/tmp/transferd-bench-data] the 1 GiB source, kept between runs (shared with downloads.sh)
#   TRANSFERD_BINARY [.build/release/transferd]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

RUNS=${BENCH_RUNS:-3}
SINK_PARENT=${BENCH_SINK:-/dev/shm}
DATA=${BENCH_DATA:-/tmp/transferd-bench-data}
DRIVE=(python3 "$PWD/bench/drive.py")
GIB=1073741824

install_tools nginx curl
ensure_binary
mkdir -p "$DATA"
ensure_random_file "$DATA/big.bin" $GIB || true
source_sha=$(sha256sum "$DATA/big.bin" | cut -d' ' -f1)
bench_setup up
sink=$(mktemp -d "$SINK_PARENT/transferd-bench-sink.XXXXXX")
cleanup_paths+=("$sink")
mkdir -p "$sink/put" "$sink/tmp"
chmod 777 "$sink" "$sink/put" "$sink/tmp"  # nginx's workers are www-data when started by root

# WebDAV PUT: nginx reads the whole body (into a temporary file beside the target) and renames it.
start_nginx "        location /put/ {
            root $sink;
            dav_methods PUT;
            client_max_body_size 0;
            client_body_temp_path $sink/tmp;
        }
        location / { return 200; }"
origin="http://127.0.0.1:$nport"
wait_for "$origin/"
start_transferd --allow-path "$DATA"

blob=$(curl -sf -X POST -T "$DATA/big.bin" -H "$auth" "$api/v1/blobs" \
       | python3 -c 'import json, sys; b = json.load(sys.stdin); print(b["id"], b["sha256"])')
read -r blob_id blob_sha <<<"$blob"
[ "$blob_sha" = "$source_sha" ] || { log "blob sha256 $blob_sha differs from the source's $source_sha"; exit 1; }

echo "transferd uploads bench — $(date -u +%FT%TZ), $(nproc) cores, $RUNS runs + 1 warm-up, medians"
echo "start:  $(uptime)"
echo "binary: $BINARY ($(stat -c %y "$BINARY" | cut -d. -f1))"
echo "sink:   $sink ($(df -T "$sink" | awk 'NR == 2 { print $2 }')); source $DATA/big.bin; $(curl --version | head -n1 | cut -d' ' -f1-2), $("$NGINX" -v 2>&1 | cut -d' ' -f3)"
: >"$work/results"

check_upload() {  # name hash?: the origin stored the whole body (and the same bytes, when asked)
  local target="$sink/put/$1.bin"
  size_is "$target" $GIB || { log "the origin stored $(stat -c %s "$target" 2>/dev/null || echo no) bytes for $1"; exit 1; }
  if [ "$2" = hash ]; then
    local got
    got=$(sha256sum "$target" | cut -d' ' -f1)
    [ "$got" = "$source_sha" ] || { log "$1: the origin stored sha256 $got, the source is $source_sha"; exit 1; }
  fi
  rm -f "$target"
}

ways=(curl blob file)
for r in $(seq 0 "$RUNS"); do
  for i in 0 1 2; do
    way=${ways[$(( (i + r) % 3 ))]}
    sync
    case $way in
      curl) t=$(timed curl -sf -T "$DATA/big.bin" "$origin/put/curl.bin") ;;
      blob) t=$("${DRIVE[@]}" upload --api "$api" --token "$token" --session "bench.up.blob.r$r" \
                  --url "$origin/put/blob.bin" --blob "$blob_id" --size $GIB) ;;
      file) t=$("${DRIVE[@]}" upload --api "$api" --token "$token" --session "bench.up.file.r$r" \
                  --url "$origin/put/file.bin" --file "$DATA/big.bin" --size $GIB) ;;
    esac
    transferd_alive
    check_upload "$way" "$([ "$r" = 1 ] && echo hash || echo size)"
    value=$(rate $(( GIB / 1000000 )) "$t")
    if [ "$r" = 0 ]; then log "  warm-up   $way: ${t}s"; continue; fi
    log "  run $r     $way: ${t}s  ($value MB/s)"
    case $way in
      curl) echo "blob curl $r $value" >>"$work/results"; echo "file curl $r $value" >>"$work/results" ;;
      *) echo "$way transferd $r $value" >>"$work/results" ;;
    esac
  done
done

echo
"${DRIVE[@]}" report "$work/results"
echo
transferd_summary
echo "end:    $(uptime)"
