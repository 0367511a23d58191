# Verdicts of the GPU check scripts (sourced by scripts/gpu-check.sh and
# scripts/gpu-replay-check.sh; gpu/checks.py is the same for the Python checks).
# Every expectation prints exactly one line, PASS, FAIL or SKIP (with the reason),
# and the script ends with one summary line, exactly "N passed, M failed, K skipped".
#
#   check NAME STATUS          PASS NAME when STATUS is 0, else FAIL NAME
#   pass NAME                  PASS NAME
#   fail NAME [WHY]            FAIL NAME (WHY)
#   skip NAME WHY [EXPECTED]   SKIP NAME (WHY); EXPECTED=1: the section was expected to run on
#                              this machine (a GPU is present, torch imports): the skip makes
#                              the exit status non-zero
#   skip_mode WHY [EXPECTED]   from now on check/pass/fail print SKIP NAME (WHY) instead (a whole
#                              section skipped, one line per expectation); skip_mode_off ends it;
#                              skipping: true while it is on (commands are then not run)
#   summary                    prints the summary line; status 1 when something failed or an
#                              expected section was skipped, else 0
#   absorb NAME LOG EXIT       adds a sub-script's summary line (the last one in LOG) to the
#                              counts; a FAIL when it has none, or when EXIT is non-zero with
#                              nothing failed (an expected section skipped, or a crash)
#   gtest_check NAME LOG EXIT  one verdict for a gtest binary's run (see below)
#   have_gpu                   nvidia-smi lists a GPU (TS_HAVE_GPU=1 or 0 says so instead)
#   gpu_expected               prints 1 when have_gpu, else 0 (for skip's EXPECTED)
#   torch_state                prints cuda, nocuda (imports, no CUDA) or absent (does not
#                              import); TS_TORCH_STATE says so instead
#   torch_skip_why             why the torch sections cannot run, or nothing (torch has CUDA)
#   torch_skip_expected        1 when that skip is expected here (no CUDA, a GPU present)
#   replay_launches FILE       number of launch outcomes in a `tracesmith replay` report
#   replay_identical FILE      number of "output: identical to the capture (X compared)" lines
#                              with X > 0 bytes
#   replay_all_ok FILE N [ITERATIONS]
#                              true when the report has N > 0 launch outcomes (N=any: as many as
#                              it has, at least one), all N identical over more than 0 bytes, no
#                              DIFFERENT; with ITERATIONS > 1 also no NONDETERMINISTIC and all N
#                              "determinism: ITERATIONS replays, all outputs identical"
CK_PASSED=0
CK_FAILED=0
CK_SKIPPED=0
CK_EXPECTED_SKIPS=0
CK_SKIP_WHY=
CK_SKIP_EXPECTED=0

pass() {
  if skipping; then skip "$1" "$CK_SKIP_WHY" "$CK_SKIP_EXPECTED"; return 0; fi
  echo "PASS $1"
  CK_PASSED=$((CK_PASSED + 1))
}
fail() {
  if skipping; then skip "$1" "$CK_SKIP_WHY" "$CK_SKIP_EXPECTED"; return 0; fi
  echo "FAIL $1${2:+ ($2)}"
  CK_FAILED=$((CK_FAILED + 1))
}
check() {
  if [ "${2:-1}" = 0 ]; then pass "$1"; else fail "$1"; fi
}
skip() {
  if [ "${3:-0}" = 1 ]; then
    echo "SKIP $1 ($2; expected on this machine: counts as a failure)"
    CK_EXPECTED_SKIPS=$((CK_EXPECTED_SKIPS + 1))
  else
    echo "SKIP $1 ($2)"
  fi
  CK_SKIPPED=$((CK_SKIPPED + 1))
}
skip_mode() {
  CK_SKIP_WHY=$1
  CK_SKIP_EXPECTED=${2:-0}
}
skip_mode_off() { CK_SKIP_WHY=; CK_SKIP_EXPECTED=0; }
skipping() { [ -n "${CK_SKIP_WHY:-}" ]; }

summary() {
  [ "$CK_EXPECTED_SKIPS" -gt 0 ] &&
    echo "($CK_EXPECTED_SKIPS of the skips are of sections expected on this machine)"
  echo "$CK_PASSED passed, $CK_FAILED failed, $CK_SKIPPED skipped"
  [ "$CK_FAILED" -eq 0 ] && [ "$CK_EXPECTED_SKIPS" -eq 0 ]
}

absorb() {
  local name=$1 log=$2 code=$3 line p f s
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" 2>/dev/null | tail -1)
  if [ -z "$line" ]; then
    fail "$name" "printed no summary line; exit $code"
    return
  fi
  read -r p _ f _ s _ <<< "${line//,/}"
  echo "$name: $line (exit $code)"
  CK_PASSED=$((CK_PASSED + p))
  CK_FAILED=$((CK_FAILED + f))
  CK_SKIPPED=$((CK_SKIPPED + s))
  if [ "$code" -ne 0 ] && [ "$f" -eq 0 ]; then
    fail "$name exit status" "exit $code with 0 failed: an expected section was skipped, or it broke"
  elif [ "$code" -eq 0 ] && [ "$f" -gt 0 ]; then
    fail "$name exit status" "exit 0 with $f failed"
  fi
}

# A gtest binary's run: FAIL when it exits non-zero or prints no result; with a
# GPU present, FAIL when a test skipped saying there is no GPU (the driver query
# failed), when every test skipped, or when a test skipped because torch was not
# usable while torch imports here with CUDA; SKIP when every test skipped on a
# machine without a GPU; else PASS with the counts.
gtest_check() {
  local name=$1 log=$2 code=$3 passed skipped
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$log" | tail -1)
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$log" | tail -1)
  skipped=${skipped:-0}
  if [ "$code" -ne 0 ]; then
    fail "$name" "exit $code"
  elif [ -z "$passed" ]; then
    fail "$name" "exit 0 but no gtest result line"
  elif have_gpu && grep -q 'skipped (no GPU)' "$log"; then
    fail "$name" "a GPU is present but tests skipped saying 'no GPU' (the driver query failed?)"
  elif [ "$passed" -eq 0 ]; then
    if have_gpu; then
      fail "$name" "a GPU is present but all $skipped tests skipped"
    else
      skip "$name" "all $skipped tests skipped (no GPU)"
    fi
  elif [ "$(torch_state)" = cuda ] && grep -q 'skipped (torch not usable here)' "$log"; then
    fail "$name" "torch imports with CUDA here but a test skipped as 'torch not usable'"
  else
    pass "$name: $passed passed, $skipped skipped"
  fi
}

have_gpu() {
  case ${TS_HAVE_GPU:-} in
    1) return 0 ;;
    0) return 1 ;;
  esac
  nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'
}
gpu_expected() { if have_gpu; then echo 1; else echo 0; fi; }
torch_state() {
  if [ -n "${TS_TORCH_STATE:-}" ]; then echo "$TS_TORCH_STATE"; return; fi
  python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "nocuda")' \
    2>/dev/null || echo absent
}

# The reason the torch sections cannot run (nothing when torch imports with CUDA),
# and whether that skip is expected here (1: torch imports without CUDA, a GPU present).
torch_skip_why() {
  case $(torch_state) in
    cuda) ;;
    nocuda) echo "torch imports but torch.cuda.is_available() is False" ;;
    *) echo "torch does not import" ;;
  esac
}
torch_skip_expected() { if [ "$(torch_state)" = nocuda ]; then gpu_expected; else echo 0; fi; }

replay_launches() { grep -cE '^launch [0-9]+  ' "$1" 2>/dev/null; }
replay_identical() {
  grep -cE '^  output: identical to the capture \(([1-9][0-9]* B|[0-9.]+ [KMGT]iB) compared\)$' \
    "$1" 2>/dev/null
}
replay_all_ok() {
  awk -v n="$2" -v it="${3:-1}" '
    /^launch [0-9]+  / { l++ }
    /^  output: identical to the capture \(([1-9][0-9]* B|[0-9.]+ [KMGT]iB) compared\)$/ { id++ }
    /DIFFERENT/ { different = 1 }
    /NONDETERMINISTIC/ { nondeterministic = 1 }
    $0 == "  determinism: " it " replays, all outputs identical" { deterministic++ }
    END {
      if (n == "any") n = l
      ok = n > 0 && l == n && id == n && !different &&
           (it <= 1 || (!nondeterministic && deterministic == n))
      exit !ok
    }' "$1"
}
