#!/usr/bin/env bash
# Builds and runs the test matrix, one stage per preset, and prints each stage's minutes and
# ctest's summary line. Usage: tools/test.sh all|release|asan|tsan|fuzz
#   release  everything but fuzz (unit, concurrency, e2e, bench-smoke, lint; real allocator)
#   asan     unit and e2e under AddressSanitizer + UBSan
#   tsan     concurrency under ThreadSanitizer
#   fuzz     each libFuzzer target for HARK_FUZZ_SECONDS (default 30)
set -uo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so clones in other folders share objects.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime

jobs=$(nproc)
failed=()
summary=()

run_stage() {
  local preset=$1 labels=$2 targets=${3:-all}
  local start=$SECONDS
  echo "=== stage ${preset}: configure and build"
  if ! cmake --preset "$preset" >"build-${preset}.configure.log" 2>&1; then
    cat "build-${preset}.configure.log"; rm -f "build-${preset}.configure.log"
    failed+=("$preset (configure)"); return
  fi
  rm -f "build-${preset}.configure.log"
  if ! cmake --build --preset "$preset" -j "$jobs" --target $targets; then
    failed+=("$preset (build)"); return
  fi
  echo "=== stage ${preset}: ctest -L '${labels}'"
  local log
  log=$(mktemp)
  ctest --test-dir "build/${preset}" -L "$labels" -j "$jobs" --output-on-failure \
        --no-tests=ignore 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local line
  line=$(grep -E 'tests passed|No tests were found' "$log" | tail -n 1)
  rm -f "$log"
  [[ $status -eq 0 ]] || failed+=("$preset (tests)")
  local minutes
  minutes=$(awk -v s=$((SECONDS - start)) 'BEGIN { printf "%.1f", s / 60 }')
  summary+=("stage ${preset}: ${minutes} min; ${line:-no summary}")
  echo "=== stage ${preset}: ${minutes} min"
}

# The tests_<label> targets that exist in a configured preset (a label may have no tests yet).
label_targets() {
  local preset=$1 found=""
  shift
  cmake --preset "$preset" >/dev/null 2>&1
  for label in "$@"; do
    if ninja -C "build/$preset" -t targets all 2>/dev/null | grep -q "^tests_${label}:"; then
      found+="tests_${label} "
    fi
  done
  echo "${found:-all}"
}

stages=${1:-all}
[[ $stages == all ]] && stages="release asan tsan fuzz"
for stage in $stages; do
  case $stage in
    release) run_stage release '^(unit|concurrency|model|mutant|e2e|bench-smoke|lint)$' ;;
    asan) run_stage asan '^(unit|concurrency|e2e)$' "$(label_targets asan unit concurrency e2e)" ;;
    tsan) run_stage tsan '^concurrency$' "$(label_targets tsan concurrency)" ;;
    fuzz) run_stage fuzz '^fuzz$' ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done

echo "=== summary"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
