# shellcheck shell=bash
# Shared by the bench/ scripts (sourced, not run): tools from Debian, scratch space and cleanup,
# a transferd and an nginx on loopback ports, and timing. All traffic stays on 127.0.0.1.
#
# The transferd measured is $BINARY: TRANSFERD_BINARY (or TRANSFERD_BIN), by default the release
# build. A script calls `bench_setup NAME` (scratch directory in $work, cleanup on exit),
# then starts what it needs with `start_transferd [flags...]` ($api, $token, $auth) and
# `start_nginx SERVER_BLOCK_BODY [HTTP_BLOCK_LINES]` ($nport; the body is nginx config inside
# `server { }`, the optional lines go in `http { }`).

log() { echo "$*" >&2; }

BINARY=${TRANSFERD_BINARY:-${TRANSFERD_BIN:-.build/release/transferd}}

# Installs the Debian packages given whose commands are missing (nginx may live in /usr/sbin).
install_tools() {  # package...
  local need=() pkg cmd
  for pkg in "$@"; do
    cmd=$pkg
    [ "$pkg" = aria2 ] && cmd=aria2c
    [ "$pkg" = binutils ] && cmd=objcopy
    [ "$pkg" = postgresql ] && cmd=pg_ctlcluster
    [ "$pkg" = iputils-ping ] && cmd=ping
    [ "$pkg" = iproute2 ] && cmd=ss
    # A library: its header, not a command, says whether it is there.
    [ "$pkg" = libnetfilter-queue-dev ] && [ -e /usr/include/libnetfilter_queue/libnetfilter_queue.h ] && continue
    command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || need+=("$pkg")
  done
  [ ${#need[@]} -eq 0 ] && return
  log "installing ${need[*]}"
  local sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    $sudo_cmd apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >/dev/null
  }
}

NGINX=/usr/sbin/nginx

ensure_binary() {
  if [ ! -x "$BINARY" ]; then
    log "no $BINARY: building it"
    make build >&2
  fi
}

# --- scratch space, services and cleanup -----------------------------------------------------------
work=""
transferd_pid=""
nginx_pid=""
cleanup_paths=()
cleanup() {
  [ -n "$transferd_pid" ] && kill -TERM "$transferd_pid" 2>/dev/null && wait "$transferd_pid" 2>/dev/null || true
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null || true
  local path
  for path in "${cleanup_paths[@]}"; do rm -rf "$path"; done
  [ -n "$work" ] && rm -rf "$work"
}

bench_setup() {  # name: $work is a fresh directory under /tmp, removed on exit
  work=$(mktemp -d "/tmp/transferd-bench-$1.XXXXXX")
  chmod 755 "$work"  # nginx workers run as an unprivileged user when started by root
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_for() {  # url [curl args...]: until it answers 200, at most $wait_seconds (20) s
  local url=$1; shift
  for _ in $(seq $(( ${wait_seconds:-20} * 10 ))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$@" "$url" || true)" = 200 ] && return 0
    sleep 0.1
  done
  log "no answer from $url"
  return 1
}

# A command that transferd runs under (say, valgrind), set by a script before start_transferd.
transferd_prefix=()

# How callers authenticate, set by a script before start_transferd: empty, a fresh `--api-token`
# ($token, $auth); otherwise these flags instead (say, `--auth-file PATH`, the script's own tokens).
transferd_credentials=()

start_transferd() {  # [flag...]: with a fresh token and data directory; sets api, token, auth
  token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  auth="Authorization: Bearer $token"
  launch_transferd "$(free_port)" "$work/transferd.log" "$@"
}

launch_transferd() {  # port log [flag...]: on 127.0.0.1:port with $token and $work/data; sets transferd_pid, api
  local port=$1 log=$2 credentials=(--api-token "$token")
  shift 2
  [ ${#transferd_credentials[@]} -eq 0 ] || credentials=("${transferd_credentials[@]}")
  # The database lives on /tmp (disk): a 201 means an fsync'ed store.
  "${transferd_prefix[@]}" "$BINARY" --listen "127.0.0.1:$port" --data-dir "$work/data" "${credentials[@]}" \
    --log-level "${TRANSFERD_LOG_LEVEL:-warning}" "$@" 2>"$log" &
  transferd_pid=$!
  api="http://127.0.0.1:$port"
  wait_for "$api/readyz"
}

stop_transferd() {  # SIGTERM, and wait for the exit
  [ -n "$transferd_pid" ] || return 0
  kill -TERM "$transferd_pid" 2>/dev/null && wait "$transferd_pid" 2>/dev/null || true
  transferd_pid=""
}

transferd_alive() {
  if ! kill -0 "$transferd_pid" 2>/dev/null; then
    log "transferd (pid $transferd_pid) is gone; the end of its log:"
    tail -n 30 "$work/transferd.log" >&2
    exit 1
  fi
}

transferd_summary() {  # one line: peak memory and how many warnings transferd logged
  local problems
  problems=$(grep -cE '"level":"(warning|error|critical)"' "$work/transferd.log" || true)
  echo "transferd: peak RSS $(awk '/VmHWM/ { print $2, $3 }' "/proc/$transferd_pid/status"), $problems warning/error log lines"
  [ "$problems" -gt 0 ] && head -n 5 "$work/transferd.log"
  return 0
}

# Connections per nginx worker; a script that holds more open sets it before start_nginx. Each
# connection may also hold the file it serves, hence twice as many descriptors.
nginx_connections=4096
# Where nginx listens, and a command it runs under (bench/wan.sh: another network namespace).
nginx_address=127.0.0.1
nginx_prefix=()

start_nginx() {  # server-block body [http-block lines]: nginx on a free port ($nport) of $nginx_address
  nport=$(free_port)
  cat >"$work/nginx.conf" <<EOF
worker_processes auto;
worker_rlimit_nofile $(( nginx_connections * 2 + 64 ));
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections $nginx_connections; }
http {
    access_log off;
    sendfile on;
    client_body_temp_path $work/client_body;
    proxy_temp_path $work/proxy;
    fastcgi_temp_path $work/fastcgi;
    uwsgi_temp_path $work/uwsgi;
    scgi_temp_path $work/scgi;
    types { application/json json; }
    default_type application/octet-stream;
${2:-}
    server {
        listen $nginx_address:$nport;
$1
    }
}
EOF
  "${nginx_prefix[@]}" "$NGINX" -p "$work" -e "$work/nginx-error.log" -c "$work/nginx.conf" &
  nginx_pid=$!
}

# --- measurement -----------------------------------------------------------------------------------
rate() {  # amount seconds -> amount per second
  awk -v a="$1" -v s="$2" 'BEGIN { printf "%.1f", a / s }'
}

timed() {  # command... -> prints the elapsed seconds; fails loudly when the command does
  local t0 t1
  t0=$EPOCHREALTIME
  if ! "$@" >/dev/null 2>"$work/tool.err"; then
    log "failed: $*"
    cat "$work/tool.err" >&2
    return 1
  fi
  t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }'
}

run_wrk() {  # threads connections duration url [wrk args...] -> "requests/s requests"; fails on errors
  local threads=$1 connections=$2 duration=$3 url=$4; shift 4
  local text
  text=$(wrk -t"$threads" -c"$connections" -d"$duration" "$@" "$url")
  if grep -qE 'Non-2xx|Socket errors' <<<"$text"; then
    log "$text"
    log "errors or non-2xx answers from $url"
    return 1
  fi
  awk '/^Requests\/sec:/ { rps = $2 } / requests in / { n = $1 } END { print rps, n }' <<<"$text"
}

# A JSON document of exactly `size` bytes, for nginx to serve beside a transferd answer of that size.
json_of_size() {  # size path
  python3 - "$1" "$2" <<'EOF'
import json, sys
size, path = int(sys.argv[1]), sys.argv[2]
doc = {"service": "nginx", "pad": ""}
doc["pad"] = "x" * max(0, size - len(json.dumps(doc, separators=(",", ":"))))
text = json.dumps(doc, separators=(",", ":"))
if len(text) != size:  # smaller than the skeleton: any JSON string of that size
    text = '"' + "x" * max(0, size - 2) + '"'
open(path, "w").write(text)
EOF
  chmod 644 "$2"
}

# --- transferd against nginx ---------------------------------------------------------------------
# For the scripts that compare an API route with nginx serving a file of the same size: nginx's
# root is $work/www (`start_nginx "        root $work/www;"`), the wrk load is $THREADS threads,
# $CONNECTIONS connections, $WARMUP then $DURATION.

completed_download() {  # base session task-id url: the task, created and waited for until completed
  local status state
  status=$(curl -s -o "$work/task.body" -w '%{http_code}' -X POST -H "$auth" -H 'Content-Type: application/json' \
    -d "{\"kind\": \"download\", \"id\": \"$3\", \"request\": {\"url\": \"$4\"}}" "$1/v1/sessions/$2/tasks")
  state=$(curl -s -H "$auth" "$1/v1/sessions/$2/tasks/$3?wait=30" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  if [ "$status" != 201 ] || [ "$state" != completed ]; then
    log "task $3 in $2: $status, $state: $(cat "$work/task.body")"
    exit 1
  fi
}

body_twin() {  # url: the size of its body (with $auth), and a file of that size for nginx at /<size>.json
  local size nsize url
  curl -sf -H "$auth" "$1" -o "$work/body"
  size=$(wc -c <"$work/body")
  json_of_size "$size" "$work/www/$size.json"
  url="http://127.0.0.1:$nport/$size.json"
  wait_for "$url"
  nsize=$(curl -sf "$url" | wc -c)
  if [ "$nsize" != "$size" ]; then
    log "nginx serves $nsize bytes, transferd $size"
    exit 1
  fi
  echo "$size"
}

# shellcheck disable=SC2153  # THREADS, CONNECTIONS, WARMUP and DURATION are the calling script's
versus_nginx() {  # label transferd-url: the same wrk load on it and on nginx's twin; prints both rates and the ratio ($ratio)
  local size nurl transferd_rps nginx_rps
  size=$(body_twin "$2")
  nurl="http://127.0.0.1:$nport/$size.json"
  log "$1: wrk -t$THREADS -c$CONNECTIONS -d$DURATION, ${size}-byte JSON body, $(nproc) cores"
  run_wrk "$THREADS" "$CONNECTIONS" "$WARMUP" "$2" -H "$auth" >/dev/null
  run_wrk "$THREADS" "$CONNECTIONS" "$WARMUP" "$nurl" >/dev/null
  read -r transferd_rps _ <<<"$(run_wrk "$THREADS" "$CONNECTIONS" "$DURATION" "$2" -H "$auth")"
  read -r nginx_rps _ <<<"$(run_wrk "$THREADS" "$CONNECTIONS" "$DURATION" "$nurl")"
  ratio=$(awk -v t="$transferd_rps" -v n="$nginx_rps" 'BEGIN { printf "%.2f", t / n }')
  awk -v label="$1" -v t="$transferd_rps" -v n="$nginx_rps" -v ratio="$ratio" 'BEGIN {
    printf "%-50s %12.0f requests/s\n", "transferd " label ":", t
    printf "%-50s %12.0f requests/s\n", "nginx static file of the same size:", n
    printf "%-50s %12.2f (goal >= 0.50: %s)\n", "ratio transferd/nginx:", ratio, (ratio >= 0.5 ? "met" : "NOT met")
  }'
}

# --- source data -----------------------------------------------------------------------------------
size_is() { [ -f "$1" ] && [ "$(stat -c %s "$1")" = "$2" ]; }

ensure_random_file() {  # path size: random bytes, generated once and kept while the size is right
  size_is "$1" "$2" && return 1
  log "generating $1 ($2 bytes)"
  head -c "$2" /dev/urandom >"$1.tmp" && mv "$1.tmp" "$1"
}
