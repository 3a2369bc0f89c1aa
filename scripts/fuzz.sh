#!/usr/bin/env bash
# Builds the libFuzzer targets (Sources/Fuzz*, see Tests/fuzz/README.md) with coverage and
# AddressSanitizer in .build-fuzz, and runs each for SECONDS seconds from its seed corpus
# Tests/fuzz/corpus/<Target>, printing how many inputs it executed. Exits nonzero when a target
# crashed or a property it checks failed; the input is then in .build-fuzz/crashes/.
# Usage: scripts/fuzz.sh SECONDS [Target…]   (no targets: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:?usage: scripts/fuzz.sh SECONDS [Target…]}
shift
swift=${SWIFT:-swift}
if [ $# -gt 0 ]; then targets=("$@"); else
  targets=()
  for dir in Sources/Fuzz*/; do
    name=$(basename "$dir")
    [ "$name" = FuzzSupport ] || targets+=("$name")
  done
fi

# libFuzzer's runtime without its main, from the toolchain's clang: fuzzMain calls
# LLVMFuzzerRunDriver itself, because SwiftPM links every executable's main to the module's own.
toolchain=$(dirname "$(readlink -f "$(command -v "$swift")")")/..
runtime=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -1)
[ -n "$runtime" ] || { echo "no libclang_rt.fuzzer_no_main in $toolchain/lib/clang" >&2; exit 1; }

# -sanitize=fuzzer given to the driver would also link libFuzzer's main; given to the frontend
# only, it adds the coverage instrumentation alone. -DFUZZING makes fuzzMain hand over to libFuzzer.
flags=(-c release --scratch-path .build-fuzz
       -Xswiftc -sanitize=address -Xswiftc -Xfrontend -Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING
       -Xlinker "$runtime" -Xlinker -lstdc++)
for target in "${targets[@]}"; do
  echo "== building $target"
  # gold warns about every ASan helper symbol it cannot export: noise, not news.
  "$swift" build "${flags[@]}" --product "$target" 2>&1 | { grep -v "Cannot export local symbol" || true; }
  [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
done

mkdir -p .build-fuzz/crashes .build-fuzz/logs
failed=()
for target in "${targets[@]}"; do
  # New inputs go to the first corpus directory; the seeds in the repository stay as they are.
  mkdir -p ".build-fuzz/corpus/$target"
  log=".build-fuzz/logs/$target.log"
  # Swift's backtracer would symbolicate for many seconds before libFuzzer saw the crash.
  if SWIFT_BACKTRACE=enable=no ".build-fuzz/release/$target" -max_total_time="$seconds" -timeout=10 \
       -print_final_stats=1 -artifact_prefix=".build-fuzz/crashes/$target-" \
       ".build-fuzz/corpus/$target" "Tests/fuzz/corpus/$target" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$target")
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "$target: ${runs:-?} executions in ${seconds}s: $status"
  if [ $status = FAILED ]; then
    grep -E "fuzz property failed|ERROR: |SUMMARY: |Test unit written|Fatal error" "$log" | head -20 | sed 's/^/    /'
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]} (inputs in .build-fuzz/crashes/, logs in .build-fuzz/logs/)" >&2
  exit 1
fi
