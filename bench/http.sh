#!/usr/bin/env bash
# HTTP request rate of transferd against the nginx anchor (bar: at least 0.5× nginx).
#
# Starts, on loopback, transferd with a token and an nginx serving a static JSON file of the same
# size as transferd's `GET /v1` body, then runs the same `wrk` load against each in this run and
# prints both request rates and the ratio transferd/nginx. Goal: at least 0.5.
#
# With BENCH_HTTP_PRINCIPALS=N, transferd starts with an `--auth-file` of N write principals (each
# its own namespace `ns<i>.`, its token known only as its SHA-256) instead of `--api-token`, and the
# caller is the LAST of them (what a linear search through the principals would find last). Besides
# `GET /v1`, the load then also goes to `GET /v1/sessions/<a session in ns<N>.>` (authentication,
# the namespace check and the session read from memory) and to a completed task's
# `GET /v1/sessions/<session>/tasks/<task>` (the task status GET of the bar, a download of a small
# file from the same nginx). Each route is compared with nginx serving a file of the same size as
# its body.
#
# Usage: bench/http.sh           (from anywhere; `make bench` runs it)
# Environment: THREADS [2], CONNECTIONS [64], DURATION [10s], WARMUP [2s], BENCH_HTTP_PRINCIPALS
# [0: an --api-token], TRANSFERD_BINARY.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
PRINCIPALS=${BENCH_HTTP_PRINCIPALS:-0}

install_tools nginx wrk curl
ensure_binary
bench_setup http

if [ "$PRINCIPALS" -gt 0 ]; then
  # The auth file, and the last principal's token (the only one used).
  principal_token=$(python3 - "$PRINCIPALS" "$work/auth.json" <<'PY'
import hashlib, json, secrets, sys
count, path = int(sys.argv[1]), sys.argv[2]
tokens = [secrets.token_hex(24) for _ in range(count)]
principals = [{"name": f"p{i}", "token_sha256": hashlib.sha256(token.encode()).hexdigest(), "role": "write",
               "namespaces": [f"ns{i}."]} for i, token in enumerate(tokens, 1)]
json.dump({"principals": principals}, open(path, "w"))
print(tokens[-1])
PY
)
  transferd_credentials=(--auth-file "$work/auth.json")
fi

TRANSFERD_LOG_LEVEL=info start_transferd
routes=("/v1")
labels=("GET /v1 (bearer)")
if [ "$PRINCIPALS" -gt 0 ]; then
  auth="Authorization: Bearer $principal_token"
  session="ns$PRINCIPALS.bench"
  status=$(curl -s -o "$work/put.body" -w '%{http_code}' -X PUT -H "$auth" -H 'Content-Type: application/json' \
    -d '{"mode": "default"}' "$api/v1/sessions/$session")
  if [ "$status" != 201 ]; then
    log "creating $session as principal p$PRINCIPALS: $status $(cat "$work/put.body")"
    exit 1
  fi
  labels=("GET /v1 (principal $PRINCIPALS of $PRINCIPALS)" "GET /v1/sessions/{id} (same principal)")
  routes+=("/v1/sessions/$session")
fi

# nginx with static JSON files, one of the size of each route's body.
mkdir -p "$work/www"
chmod 755 "$work/www"
start_nginx "        root $work/www;"

if [ "$PRINCIPALS" -gt 0 ]; then
  # A completed download in the principal's session, for the task status GET.
  head -c 4096 /dev/urandom >"$work/www/origin.bin"
  chmod 644 "$work/www/origin.bin"
  wait_for "http://127.0.0.1:$nport/origin.bin"
  completed_download "$api" "$session" t1 "http://127.0.0.1:$nport/origin.bin"
  labels+=("GET …/tasks/{task} (same principal)")
  routes+=("/v1/sessions/$session/tasks/t1")
fi

for i in "${!routes[@]}"; do
  versus_nginx "${labels[$i]}" "$api${routes[$i]}"
done
