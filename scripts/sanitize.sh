#!/usr/bin/env bash
# Runs the Swift tests (`swift test`: XCTest and Swift Testing) under one sanitizer, in a scratch
# path of its own so it never rebuilds the plain debug build (.build) or the other sanitizer's.
#   scripts/sanitize.sh address            AddressSanitizer with LeakSanitizer (.build-asan)
#   scripts/sanitize.sh thread [FILTER]    ThreadSanitizer (.build-tsan); FILTER is `swift test --filter`
# Fails when a test fails or the sanitizer reports anything, even if the test run itself passed
# (a report in a pool thread after the last test must not slip through). Suppressions, each with
# its reason, are in Tests/sanitizers/.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address|thread [FILTER]}
filter=${2:-}
swift=${SWIFT:-swift}
supp=$PWD/Tests/sanitizers

# Reports name files and lines: the toolchain's symbolizer, next to swift (no Debian package).
symbolizer=$(dirname "$(readlink -f "$(command -v "$swift")")")/llvm-symbolizer
[ -x "$symbolizer" ] || symbolizer=$(command -v llvm-symbolizer || true)

case $kind in
  address)
    scratch=.build-asan
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${symbolizer:+external_symbolizer_path=$symbolizer}"
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    pattern='ERROR: (AddressSanitizer|LeakSanitizer)'
    ;;
  thread)
    scratch=.build-tsan
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp:print_suppressions=0:${symbolizer:+external_symbolizer_path=$symbolizer}"
    pattern='WARNING: ThreadSanitizer|ERROR: ThreadSanitizer'
    ;;
  *) echo "unknown sanitizer: $kind" >&2; exit 2 ;;
esac

log=$scratch/sanitize.log
mkdir -p "$scratch"
start=$SECONDS
"$swift" build --build-tests --sanitize="$kind" --scratch-path "$scratch"
built=$SECONDS
status=0
"$swift" test --skip-build --sanitize="$kind" --scratch-path "$scratch" ${filter:+--filter "$filter"} 2>&1 | tee "$log" || status=$?
echo "sanitize $kind: build $((built - start)) s, tests $((SECONDS - built)) s (log: $log)"
if grep -Eq "$pattern" "$log"; then
  echo "sanitize $kind: $(grep -Ec "$pattern" "$log") report(s); see $log" >&2
  exit 1
fi
exit $status
