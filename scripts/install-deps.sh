#!/usr/bin/env bash
# Installs what building and testing transferd needs, and only what is missing:
#   build:  libcurl4-openssl-dev, libsqlite3-dev (Debian packages)
#   test:   the Python packages the integration tests use (pip)
# Usage: scripts/install-deps.sh build|test
set -euo pipefail
what=${1:-build}

need_debs=()
wanted_debs=(libcurl4-openssl-dev libsqlite3-dev)
for pkg in "${wanted_debs[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_debs+=("$pkg")
done
if [ ${#need_debs[@]} -gt 0 ]; then
  echo "installing ${need_debs[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  # A fresh machine may have empty package lists: update once if the install cannot find them.
  $sudo_cmd apt-get install -y -q "${need_debs[@]}" >/dev/null 2>&1 || {
    $sudo_cmd apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need_debs[@]}" >/dev/null
  }
fi

if [ "$what" = test ]; then
  missing=()
  python3 -c 'import pytest' 2>/dev/null || missing+=(pytest)
  python3 -c 'import requests' 2>/dev/null || missing+=(requests)
  command -v openapi-spec-validator >/dev/null 2>&1 || missing+=(openapi-spec-validator)
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]} (pip)" >&2
    python3 -m pip install -q "${missing[@]}"
  fi
fi
