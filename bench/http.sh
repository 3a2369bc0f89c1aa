#!/usr/bin/env bash
# HTTP request rate of transferd against the nginx anchor (PRODUCT.md "Bars it must reach").
#
# Starts, on loopback, transferd with a token and an nginx serving a static JSON file of the same
# size as transferd's `GET /v1` body, then runs the same `wrk` load against each in this run and
# prints both request rates and the ratio transferd/nginx. Goal: at least 0.5.
#
# Usage: bench/http.sh           (from anywhere; `make bench` runs it)
# Environment: THREADS [2], CONNECTIONS [64], DURATION [10s], WARMUP [2s], TRANSFERD_BINARY.
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
BINARY=${TRANSFERD_BINARY:-.build/release/transferd}

# --- tools: nginx, wrk, curl from Debian, installed only when missing -----------------------------
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v curl >/dev/null 2>&1 || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    $sudo_cmd apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >/dev/null
  }
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

if [ ! -x "$BINARY" ]; then
  echo "no $BINARY: building it" >&2
  make build >&2
fi

# --- scratch space and cleanup ---------------------------------------------------------------------
work=$(mktemp -d /tmp/transferd-bench-http.XXXXXX)
chmod 755 "$work"  # nginx workers run as an unprivileged user when started by root
transferd_pid=""
nginx_pid=""
cleanup() {
  [ -n "$transferd_pid" ] && kill -TERM "$transferd_pid" 2>/dev/null && wait "$transferd_pid" 2>/dev/null || true
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_for() {  # url [curl args...]: until it answers 200, at most 20 s
  local url=$1; shift
  for _ in $(seq 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$@" "$url" || true)" = 200 ] && return 0
    sleep 0.1
  done
  echo "no answer from $url" >&2
  return 1
}

# --- transferd -------------------------------------------------------------------------------------
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
auth="Authorization: Bearer $token"
tport=$(free_port)
"$BINARY" --listen "127.0.0.1:$tport" --data-dir "$work/data" --api-token "$token" --log-level info 2>/dev/null &
transferd_pid=$!
wait_for "http://127.0.0.1:$tport/readyz"
turl="http://127.0.0.1:$tport/v1"
curl -sf -H "$auth" "$turl" -o "$work/v1.body"
size=$(wc -c <"$work/v1.body")

# --- nginx with a static JSON file of the same size -----------------------------------------------
mkdir -p "$work/www"
python3 - "$size" "$work/www/v1.json" <<'EOF'
import json, sys
size, path = int(sys.argv[1]), sys.argv[2]
doc = {"service": "nginx", "pad": ""}
doc["pad"] = "x" * max(0, size - len(json.dumps(doc, separators=(",", ":"))))
text = json.dumps(doc, separators=(",", ":"))
if len(text) != size:  # smaller than the skeleton: any JSON string of that size
    text = '"' + "x" * max(0, size - 2) + '"'
open(path, "w").write(text)
EOF
chmod 755 "$work/www"
chmod 644 "$work/www/v1.json"
nport=$(free_port)
cat >"$work/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $work/client_body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    types { }
    default_type application/json;
    server {
        listen 127.0.0.1:$nport;
        root $work/www;
    }
}
EOF
"$NGINX" -p "$work" -e "$work/nginx-error.log" -c "$work/nginx.conf" &
nginx_pid=$!
nurl="http://127.0.0.1:$nport/v1.json"
wait_for "$nurl"
nsize=$(curl -sf "$nurl" | wc -c)
if [ "$nsize" != "$size" ]; then
  echo "nginx serves $nsize bytes, transferd $size" >&2
  exit 1
fi

# --- load ------------------------------------------------------------------------------------------
run_wrk() {  # duration url [wrk args...] -> prints requests/s; fails on non-2xx answers or errors
  local duration=$1 url=$2; shift 2
  local out
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$duration" "$@" "$url")
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
    echo "$out" >&2
    echo "errors or non-2xx answers from $url" >&2
    return 1
  fi
  awk '/^Requests\/sec:/ { print $2 }' <<<"$out"
}

echo "wrk -t$THREADS -c$CONNECTIONS -d$DURATION, ${size}-byte JSON body, $(nproc) cores" >&2
run_wrk "$WARMUP" "$turl" -H "$auth" >/dev/null
run_wrk "$WARMUP" "$nurl" >/dev/null
transferd_rps=$(run_wrk "$DURATION" "$turl" -H "$auth")
nginx_rps=$(run_wrk "$DURATION" "$nurl")

awk -v t="$transferd_rps" -v n="$nginx_rps" 'BEGIN {
  ratio = t / n
  printf "transferd GET /v1 (bearer): %12.0f requests/s\n", t
  printf "nginx static file:          %12.0f requests/s\n", n
  printf "ratio transferd/nginx:      %12.2f (goal >= 0.50: %s)\n", ratio, (ratio >= 0.5 ? "met" : "NOT met")
}'
