#!/usr/bin/env bash
# Restart time with 100,000 tasks stored, and partial downloads resuming from their offset after
# the restart (bar: ready in under a second).
#
# Fills a fresh data directory through tasks:batch (completed tasks, tasks scheduled for tomorrow,
# and slow downloads from a local origin caught mid-way), then stops transferd (SIGTERM, then
# SIGKILL) and times each start from the exec to the first 200 of /readyz. The partial downloads
# must then complete with the right sha256, each continuing with Range from its offset.
# The figures are printed; a broken check (tasks lost, a download started over) exits 1.
#
# Usage: bench/restart.sh       (from anywhere)
# Environment: TASKS [100000], UNFINISHED [20000], PARTIALS [8], RUNS [3], TRANSFERD_BINARY.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

ensure_binary
scripts/install-deps.sh test >&2

TRANSFERD_BINARY="$(cd "$(dirname "$BINARY")" && pwd)/$(basename "$BINARY")" exec python3 bench/restart.py \
  --tasks "${TASKS:-100000}" --unfinished "${UNFINISHED:-20000}" --partials "${PARTIALS:-8}" --runs "${RUNS:-3}"
