#!/usr/bin/env bash
# The README's second command (and CI's): installs dependencies, checks the
# module layering (scripts/check-layering.py, the table in docs/architecture.md),
# that the paths the documentation names exist (scripts/check-doc-paths.py)
# and the formatting (clang-format --dry-run --Werror on every tracked C/C++/CUDA
# file), builds and runs every test twice — a release build and an
# AddressSanitizer+UBSan build — then the tests of the concurrent parts under
# ThreadSanitizer (the tsan preset builds only those: ctest label tsan,
# docs/testing.md), then runs each fuzzer for a bounded time.
# GPU tests skip visibly on machines without a GPU; run scripts/gpu-check.sh
# on a GPU machine.
#   FUZZ_SECONDS=N   seconds per fuzzer (default 20; 0 skips fuzzing)
#   SKIP_ASAN=1      skip the AddressSanitizer build (local iteration only)
#   SKIP_TSAN=1      skip the ThreadSanitizer build (local iteration only)
# Warnings are errors in the release build and in the asan build's test units;
# instrumented code is exempt (GCC 12 reports false positives inside libstdc++
# when instrumented). The asan build takes the test units from ccache, as the
# release build compiled them (tests/CMakeLists.txt); the phase table says how
# many.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}

# Wall time of each phase, printed at the end (docs/testing.md has CI's budget).
PHASES=()
TEST_START=$SECONDS
phase_start() { PHASE_T0=$SECONDS; }
phase_end() { PHASES+=("$(printf '%-34s %4d s' "$1" $((SECONDS - PHASE_T0)))"); }
print_phases() {
  echo "=== wall time by phase ==="
  printf '  %s\n' "${PHASES[@]}"
  printf '  %-34s %4d s (CI budget: 2100 s, limit 5400 s)\n' "total" $((SECONDS - TEST_START))
}

phase_start
scripts/install-deps.sh --test
phase_end "dependencies"

phase_start
echo "=== layering (docs/architecture.md) ==="
python3 scripts/check-layering.py
echo "=== paths the documentation names ==="
python3 scripts/check-doc-paths.py

cxx_sources() {  # NUL-separated: the tracked C/C++/CUDA files (all of them without git)
  local pats=('*.c' '*.cc' '*.cpp' '*.cxx' '*.h' '*.hh' '*.hpp' '*.cu' '*.cuh')
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z -- "${pats[@]}"
  else
    find . -type d \( -name .git -o -name 'build*' -o -name out -o -name .cache -o -name .device \) -prune \
      -o -type f \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.cxx' -o -name '*.h' \
      -o -name '*.hh' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print0
  fi
}
# The repo is formatted by clang-format 14: another major version formats
# some constructs differently, so the check runs with 14 only.
CLANG_FORMAT=$(command -v clang-format-14 || command -v clang-format || true)
cf_version=$([ -n "$CLANG_FORMAT" ] && "$CLANG_FORMAT" --version | grep -oE 'version [0-9]+' | grep -oE '[0-9]+' || true)
if [ "$cf_version" != 14 ]; then
  echo "=== formatting: SKIPPED (needs clang-format 14; found ${CLANG_FORMAT:-none} ${cf_version}) ==="
else
  echo "=== formatting ($("$CLANG_FORMAT" --version | grep -o 'version [0-9.]*'), .clang-format) ==="
  format_log=$(mktemp)
  if ! cxx_sources | xargs -0 -r "$CLANG_FORMAT" --dry-run --Werror >"$format_log" 2>&1; then
    head -n 40 "$format_log"
    echo "files not formatted (fix: clang-format -i FILE...):"
    grep -oE '^[^ :]+:[0-9]+:[0-9]+: error' "$format_log" | cut -d: -f1 | sort -u | sed 's/^/  /'
    rm -f "$format_log"
    exit 1
  fi
  rm -f "$format_log"
  echo "formatting: $(cxx_sources | tr -cd '\0' | wc -c) files clean"
fi
phase_end "layering, doc paths, formatting"

# ccache's counters (the build launches it where installed: CMakeLists.txt).
ccache_count() {  # counter name
  command -v ccache >/dev/null || { echo 0; return; }
  ccache --print-stats 2>/dev/null | awk -v k="$1" '$1 == k {print $2; f=1} END {if (!f) print 0}'
}

run_suite() {  # preset [command prefix...]
  local preset=$1 hits misses
  shift
  echo "=== build + test: $preset ==="
  phase_start
  cmake --preset "$preset" >/dev/null
  hits=$(ccache_count direct_cache_hit)
  misses=$(ccache_count cache_miss)
  "$@" cmake --build --preset "$preset" -j "$JOBS"  # (tsan: only the target tsan_tests)
  phase_end "build: $preset"
  if command -v ccache >/dev/null; then
    # The asan build takes the test units the release build compiled.
    PHASES+=("$(printf '  (ccache: %d units from the cache, %d compiled)' \
      $(($(ccache_count direct_cache_hit) - hits)) $(($(ccache_count cache_miss) - misses)))")
  fi
  phase_start
  if ! "$@" ctest --preset "$preset" -j "$JOBS"; then
    phase_end "tests: $preset"
    print_phases
    exit 1
  fi
  phase_end "tests: $preset"
  # Under ASan a test binary runs as gtest shards (tests/CMakeLists.txt): the
  # tests skipped inside them are listed here, as ctest lists the release ones.
  local log="build/$preset/Testing/Temporary/LastTest.log"
  if [ "$preset" = asan ] && [ -f "$log" ]; then
    local skipped
    skipped=$(grep -ohE '^\[  SKIPPED \] [A-Za-z0-9_/]+\.[A-Za-z0-9_./]+' "$log" | sort -u | sed 's/^\[  SKIPPED \] /  /' || true)
    echo "asan: $(printf '%s' "$skipped" | grep -c . || true) tests skipped inside shards:"
    [ -z "$skipped" ] || printf '%s\n' "$skipped"
  fi
}

run_suite release
[ "${SKIP_ASAN:-0}" = 1 ] || run_suite asan
if [ "${SKIP_TSAN:-0}" != 1 ]; then
  # GCC 12's ThreadSanitizer cannot place its shadow memory when the kernel
  # randomizes mmap with more than 28 bits ("FATAL: ThreadSanitizer: unexpected
  # memory mapping"): there its binaries (also run at build time, to list the
  # tests) run without address randomization.
  no_aslr=()
  if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
    no_aslr=(setarch "$(uname -m)" -R)
  fi
  run_suite tsan ${no_aslr[@]+"${no_aslr[@]}"}
fi

run_fuzzer() {  # fuzzer binary: runs it for FUZZ_SECONDS on a copy of its corpus
  local f=$1 name corpus log
  name=$(basename "$f" _fuzzer)
  corpus=$(mktemp -d)
  log=$(mktemp)
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$corpus/"
  if ! "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix=build/fuzz/ "$corpus" >"$log" 2>&1; then
    { echo "--- $name"; tail -n 40 "$log"; echo "fuzzer $name found a failure (input saved under build/fuzz/)"; }
    rm -rf "$corpus" "$log"
    return 1
  fi
  { echo "--- $name"; grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "$log" || true; }
  rm -rf "$corpus" "$log"
}

if [ "$FUZZ_SECONDS" -gt 0 ]; then
  phase_start
  echo "=== fuzzers (${FUZZ_SECONDS}s each, $JOBS at a time) ==="
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$JOBS" --target fuzzers
  # One fuzzer per core: each is single-threaded and runs for a fixed time.
  export -f run_fuzzer
  export FUZZ_SECONDS
  if ! printf '%s\0' build/fuzz/fuzz/*_fuzzer | xargs -0 -n1 -P "$JOBS" bash -c 'run_fuzzer "$0"'; then
    phase_end "fuzzers"
    print_phases
    exit 1
  fi
  phase_end "fuzzers"
fi
print_phases
echo "=== all test suites passed ==="
