#!/usr/bin/env bash
# Builds and runs the test matrix, one stage per preset, and prints each stage's minutes and
# ctest's summary line. Usage: tools/test.sh all|release|asan|tsan|fuzz
#   release  everything but fuzz (unit, concurrency, e2e, bench-smoke, lint, install, cluster: a
#            real etcd; real allocator)
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
tails=()
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
  if ! missing_binaries "$preset" "$labels"; then
    failed+=("$preset (missing test binaries)"); return
  fi
  echo "=== stage ${preset}: ctest -L '${labels}'"
  local log
  log=$(mktemp)
  ctest --test-dir "build/${preset}" -L "$labels" -j "$jobs" --output-on-failure \
        --no-tests=ignore 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  local line
  line=$(grep -E 'tests passed|No tests were found' "$log" | tail -n 1)
  # CI shows only the end of its output: the names of the failed tests go into the summary.
  local names
  names=$(sed -n '/The following tests FAILED:/,$p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ' |
          sed -E 's/^[[:space:]]+[0-9]+ - //' | tr '\n' ';')
  rm -f "$log"
  [[ $status -eq 0 ]] || failed+=("$preset (tests: ${names:-see above})")
  [[ $status -eq 0 ]] || tails+=("$(failed_tails "$preset")")
  if ! count_holds "$preset" "$line"; then failed+=("$preset (test count dropped)"); fi
  local minutes
  minutes=$(awk -v s=$((SECONDS - start)) 'BEGIN { printf "%.1f", s / 60 }')
  summary+=("stage ${preset}: ${minutes} min; ${line:-no summary}")
  echo "=== stage ${preset}: ${minutes} min"
}

# The last lines each failed test printed, from ctest's own log: CI shows only the end of the
# run, where they are repeated under the summary.
failed_tails() {
  local dir="build/$1/Testing/Temporary"
  [[ -f $dir/LastTestsFailed.log && -f $dir/LastTest.log ]] || return 0
  awk -F: 'FNR == NR { bad[$2] = 1; next }
       /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[^:]*: /, "", name); n = 0; next }
       /^"[^"]+" end time:/ { if (name in bad) { print "--- the last lines of " name ":"
                                                  for (i = (n > 30 ? n - 30 : 0); i < n; i++)
                                                    print lines[i] }
                              name = ""; next }
       name != "" { lines[n++] = $0 }' "$dir/LastTestsFailed.log" "$dir/LastTest.log"
}

# The tests_<label> targets that exist in a configured preset (a label may have no tests yet).
# The target list is read whole before it is searched: `grep -q` on a pipe under pipefail
# fails the pipe when it stops reading early, which once read as "no such target".
label_targets() {
  local preset=$1 found="" targets
  shift
  cmake --preset "$preset" >/dev/null 2>&1
  targets=$(ninja -C "build/$preset" -t targets all 2>/dev/null)
  for label in "$@"; do
    if grep -q "^tests_${label}:" <<<"$targets"; then
      found+="tests_${label} "
    fi
  done
  echo "${found:-all}"
}

# Fails (and names them) if a test binary of the stage's labels was not built: ctest would
# otherwise run it as zero tests. The lists come from hark_write_test_binaries (hark.cmake).
missing_binaries() {
  local preset=$1 labels=$2 list binary missing=0
  for list in "build/$preset"/test-binaries/*.txt; do
    [[ -f $list ]] || continue
    [[ $(basename "$list" .txt) =~ $labels ]] || continue
    while read -r binary; do
      [[ -z $binary || -x $binary ]] && continue
      echo "stage ${preset}: test binary not built: ${binary}"
      missing=1
    done <"$list"
  done
  [[ $missing -eq 0 ]]
}

# Fails if the stage ran fewer tests than tools/test-counts.txt expects of it (a floor: raise it
# when tests are added, so a stage cannot shrink silently).
count_holds() {
  local preset=$1 line=$2 ran expected
  expected=$(awk -v p="$preset" '$1 == p { print $2 }' tools/test-counts.txt)
  [[ -n $expected ]] || return 0
  ran=$(grep -oE 'out of [0-9]+' <<<"$line" | grep -oE '[0-9]+')
  if [[ -z $ran || $ran -lt $expected ]]; then
    echo "stage ${preset}: ran ${ran:-no} tests, expected at least ${expected} (tools/test-counts.txt)"
    return 1
  fi
  echo "stage ${preset}: ran ${ran} tests (at least ${expected} expected)"
}

stages=${1:-all}
[[ $stages == all ]] && stages="release asan tsan fuzz"
for stage in $stages; do
  case $stage in
    release) run_stage release '^(unit|concurrency|model|mutant|e2e|promtool|cluster|bench-smoke|lint|install)$' ;;
    asan) run_stage asan '^(unit|concurrency|e2e)$' "$(label_targets asan unit concurrency e2e)" ;;
    tsan) run_stage tsan '^concurrency$' "$(label_targets tsan concurrency)" ;;
    fuzz) run_stage fuzz '^fuzz$' ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done

[[ ${#tails[@]} -eq 0 ]] || printf '%s\n' "${tails[@]}"
echo "=== summary"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
