#!/usr/bin/env bash
# Every GPU test and the capture overhead benchmark, in one go, on the GPU
# machine. Run from the repository root:
#
#   scripts/gpu-check.sh [BUILD_DIR=build/gpu]
#   GPU_CHECK=tests,replay,torchjson,python,inproc,pcsampling,sasscounts,gpumetrics,replaymetrics,appevents,compiledlines,stalls,pccost,metricscost,memory,job,nccl,selfcost,apicost,launchcost,bench,sweep (default;
#             also: fixtures, example, pcpeers, abcost, htatraces)
#   BENCH_ROUNDS=8  BENCH_WORKLOADS=ll,pyll,mlp,xf  SWEEP_WORKLOADS=xf
#   GPU_TESTS="capture_gpu_test ..."  (a subset of the GPU gtests)
#   PCPEERS_STEPS=30 PCPEERS_ROUNDS=5 PCPEERS_BUDGET=480 PCPEERS_COMPILE=1 (the model under
#   torch.compile)  (pcpeers: ~8 minutes by its
#   budget, so alone in a device call: GPU_CHECK=pcpeers)
# Times on an H100: tests ~2.5 min, selfcost ~0.5, apicost ~1, bench ~2 min per
# round of the transformer step, ~1.5 of the MLP, ~0.3 of the launch loop;
# a device call is limited to 10 minutes, so split the benchmark over calls
# (GPU_CHECK=bench BENCH_WORKLOADS=xf, then mlp, then ll,pyll).
#
# BUILD_DIR may be carried from the development machine
# (scripts/make-gpu-carry.sh); it is configured and built here when
# bin/tracesmith is missing. Logs and small artifacts go to $OUT (or
# ./gpu-check-out): gpu-check.log, bench.log, replay-check.log, raw CUPTI
# fixtures, example trace, a real torch.profiler trace (gzip JSON),
# selfcost.log, api_costs.log, sweep.log (+ bench.json, sweep.json: every run).
#
# Verdicts (scripts/lib/checks.sh): one PASS, FAIL or SKIP line (with the reason)
# per expectation: each gtest binary (a run in which tests skipped saying "no GPU"
# while a GPU is present, or every test skipped, is a FAIL), each workload's exit
# status, and the sub-checks' own verdicts (scripts/gpu-replay-check.sh,
# gpu/*_check.py: their lines are shown and their summary lines added up). The
# log ends with one summary line "N passed, M failed, K skipped"; the exit status
# is 1 when anything failed or a section expected on this machine was skipped (a
# GPU is present and a program or gtest binary is missing; torch imports without
# CUDA), else 0. A section that needs torch is skipped when torch does not import.
set -u
. "$(dirname "$0")/lib/checks.sh"
BUILD=${1:-build/gpu}
OUT=${OUT:-$PWD/gpu-check-out}
WHAT=${GPU_CHECK:-tests,replay,torchjson,python,inproc,pcsampling,sasscounts,gpumetrics,replaymetrics,appevents,compiledlines,stalls,pccost,metricscost,memory,job,nccl,selfcost,apicost,launchcost,bench,sweep}
ROUNDS=${BENCH_ROUNDS:-8}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu-check.log") 2>&1
want() { [[ ",$WHAT," == *",$1,"* ]]; }
finish() {
  echo "GPU-CHECK done: $(date -u +%H:%M:%S)"
  summary
  exit $?
}
# pycheck NAME LOG CMD...: runs a checker that prints its own verdicts and summary
# line into LOG; shows its verdict lines and adds its summary to ours.
pycheck() {
  local name=$1 log=$2 code
  "${@:3}" > "$log" 2>&1
  code=$?
  grep -E "^(PYPROFILE|INPROC|MEMCHECK|JOBCHECK|NCCLCHECK|PCSAMPLING|PCSMORE|SASSCOUNTS|GPUMETRICS|REPLAYMETRICS|APPEVENTS|COMPILEDLINES|STALLS|PCPEERS|ABCOST) " "$log"
  absorb "$name" "$log" "$code"
}
# needs_torch NAME...: true when torch imports with CUDA; else a SKIP line for each NAME.
needs_torch() {
  local why n
  why=$(torch_skip_why)
  [ -z "$why" ] && return 0
  for n in "$@"; do skip "$n" "$why" "$(torch_skip_expected)"; done
  return 1
}

echo "GPU-CHECK date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "GPU-CHECK gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
echo "GPU-CHECK host: $(uname -r), $(nproc) cores; sources: the working tree sent with the call"
# The machine as every check here and below sees it (one probe each).
TS_HAVE_GPU=$(gpu_expected)
TS_TORCH_STATE=$(torch_state)
export TS_HAVE_GPU TS_TORCH_STATE
echo "GPU-CHECK machine: GPU $([ "$TS_HAVE_GPU" = 1 ] && echo present || echo absent), torch: $TS_TORCH_STATE"

if [ ! -x "$BUILD/bin/tracesmith" ]; then
  echo "GPU-CHECK building $BUILD"
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTS_BUILD_TESTS=ON >/dev/null &&
    ninja -C "$BUILD" tracesmith tracesmith-inject tracesmith-replay-gpu cupti-floor \
      replay_make_capture capture_gpu_test capture_gpu_stacks_test capture_gpu_range_test \
      capture_gpu_session_test capture_gpu_sync_test capture_gpu_memory_test ||
    { fail "build of $BUILD"; finish; }
fi
PROGS=$BUILD/gpu-programs
gpu/build-programs.sh "$PROGS" || { fail "gpu programs (gpu/build-programs.sh $PROGS)"; finish; }
TS=$(realpath "$BUILD/bin/tracesmith")
# The gtests find the CLI through CMakeCache.txt above them; a carried build has none.
export TS_TRACESMITH_BIN=$TS
"$TS" devices > "$OUT/devices.txt" 2>&1
code=$?
cat "$OUT/devices.txt"
if have_gpu; then
  check "devices: the driver lists the GPU (tracesmith devices exit 0, a 'GPU 0:' line)" \
    $([ $code -eq 0 ] && grep -q '^GPU 0:' "$OUT/devices.txt"; echo $?)
else
  skip "devices: the driver lists the GPU" "no GPU here (nvidia-smi lists none)"
fi

export TS_TRACESMITH=$TS TS_GPU_BIN=$(realpath "$PROGS") TS_GPU_OUT=${TMPDIR:-/tmp}/ts-gpu-traces
export TS_TORCH_WORKLOAD=$PWD/bench/workloads/torch_mlp_train.py PYTHONUNBUFFERED=1
mkdir -p "$TS_GPU_OUT"

if want fixtures; then
  # Raw CUPTI records for the CPU conversion tests (tests/capture/fixtures/).
  RAW=$TS_GPU_OUT/raw
  for p in "kernel_count 10" "cuda_graph 2"; do
    rm -rf "$RAW"; mkdir -p "$RAW"
    name=$(echo "$p" | tr ' ' '_')
    "$TS" profile -q -f --dump-raw "$RAW" -o "$TS_GPU_OUT/$name.sbt" -- $PROGS/$p
    check "fixture $name.rawdump written" \
      $(cp "$RAW"/cupti-*.rawdump "$OUT/$name.rawdump" && [ -s "$OUT/$name.rawdump" ]; echo $?)
    [ -f "$OUT/$name.rawdump" ] && echo "GPU-CHECK fixture $name.rawdump $(stat -c %s "$OUT/$name.rawdump") bytes"
  done
fi

if want tests; then
  for t in ${GPU_TESTS:-capture_gpu_test capture_gpu_stacks_test capture_gpu_range_test \
             capture_gpu_session_test capture_gpu_sync_test capture_gpu_memory_test}; do
    if [ ! -x "$BUILD/tests/capture/$t" ]; then
      skip "gtest $t" "$BUILD/tests/capture/$t not built" "$(gpu_expected)"
      continue
    fi
    "$BUILD/tests/capture/$t" > "$OUT/gtest-$t.log" 2>&1
    code=$?
    grep -v '^\[.*\] tracesmith: recording' "$OUT/gtest-$t.log"
    echo "GPU-CHECK gtest $t exit: $code"
    gtest_check "gtest $t" "$OUT/gtest-$t.log" "$code"
  done
fi

if want replay; then
  OUT=$OUT scripts/gpu-replay-check.sh "$BUILD" >/dev/null 2>&1
  code=$?
  grep -E "^(PASS|FAIL|SKIP) " "$OUT/replay-check.log"
  absorb "replay-check (log: replay-check.log)" "$OUT/replay-check.log" "$code"
fi

if want torchjson && needs_torch "torch.profiler trace (the JSON exporter's schema fixture)"; then
  # A real torch.profiler trace: the schema fixture for the JSON exporter.
  TS_TORCH_TRACE=$OUT/torch_trace.json python3 bench/workloads/torch_mlp_train.py --steps 5 \
    --profiler torch && gzip -9f "$OUT/torch_trace.json"
  check "torch.profiler trace (the JSON exporter's schema fixture) written" \
    $([ -s "$OUT/torch_trace.json.gz" ]; echo $?)
  [ -f "$OUT/torch_trace.json.gz" ] && echo "GPU-CHECK torch trace: $(stat -c %s "$OUT/torch_trace.json.gz") bytes gzip"
fi

if want htatraces && needs_torch "HTA traces (torch.profiler and tracesmith, same steps)"; then
  # Issue #41 item 3 (docs/export.md, "Read by HTA"): 10 bf16 Transformer steps after the same
  # warm-up, once under torch.profiler (with_stack, a schedule over the 10 steps and prof.step()
  # per step: Kineto's ProfilerStep#N; not yet run on a GPU with the schedule)
  # and once under `tracesmith profile --capture-range=cudaProfilerApi` around the same steps;
  # HTA runs on both off the GPU machine (docs/export.md has the table).
  H=$OUT/hta; mkdir -p "$H"; rm -f "$H"/torch_xf.json* "$H"/ts_xf.sbt
  TS_TORCH_SCHEDULE=1 TS_TORCH_TRACE=$H/torch_xf.json python3 bench/workloads/torch_transformer_train.py \
    --steps 10 --profiler torch-stack && gzip -9f "$H/torch_xf.json"
  check "HTA traces: torch.profiler's (10 Transformer steps) written" $([ -s "$H/torch_xf.json.gz" ]; echo $?)
  "$TS" profile -f -q --capture-range=cudaProfilerApi -o "$H/ts_xf.sbt" -- \
    python3 bench/workloads/torch_transformer_train.py --steps 10 --profiler cuda-range
  check "HTA traces: tracesmith's (the same 10 steps) written" $?
fi
if want python; then
  # In-process capture from Python (tracesmith.profile through ctypes): the same
  # kernels as `tracesmith profile --capture-range=cudaProfilerApi` for the same steps.
  # (Without torch each mode prints its SKIP lines.)
  P=$OUT/python; mkdir -p "$P"
  PY=(python3 gpu/python_profile_check.py)
  export PYTHONPATH=$PWD/python TRACESMITH_INJECT_LIB=$(realpath "$BUILD/lib/libtracesmith-inject.so")
  pycheck "python inproc" "$P/inproc.log" "${PY[@]}" inproc "$P"
  pycheck "python range" "$P/range.log" "$TS" profile -q -f --capture-range=cudaProfilerApi \
    -o "$P/range.sbt" -- "${PY[@]}" range "$P"
  pycheck "python schedule" "$P/schedule.log" "${PY[@]}" schedule "$P"
  pycheck "python taken" "$P/taken.log" "${PY[@]}" taken "$P"
  pycheck "python replay" "$P/replay.log" env TRACESMITH_CLI="$TS" "${PY[@]}" replay "$P"
  pycheck "python compare" "$P/compare.log" "${PY[@]}" compare "$TS" "$P"
  unset PYTHONPATH
  # The package's extension (_core) built here for this machine's Python
  # (gpu/build-python-ext.sh, from the carried libraries): the trace as
  # columns, then the package's own test suite under this Python.
  if gpu/build-python-ext.sh "$BUILD" "$P/pkg" python3 > "$P/build-ext.log" 2>&1; then
    pass "python ext: the _core extension builds here (Python $(python3 -c 'import sys; print(sys.version.split()[0])'))"
    pycheck "python columns" "$P/columns.log" env PYTHONPATH="$P/pkg" "${PY[@]}" columns "$TS" "$P"
    pycheck "python command" "$P/command.log" env PYTHONPATH="$P/pkg" TRACESMITH_CLI="$TS" \
      "${PY[@]}" command "$TS" "$P"
    if python3 -c "import pytest" 2>/dev/null; then
      PYTHONPATH=$P/pkg TRACESMITH_CLI=$TS TS_SOURCE_DIR=$PWD \
        python3 -m pytest -q -p no:cacheprovider tests/python > "$P/pytest.log" 2>&1
      code=$?
      check "python pytest tests/python under the extension built here (exit $code: $(tail -1 "$P/pytest.log"))" $code
    else
      skip "python pytest tests/python" "pytest is not installed for this Python"
    fi
  else
    fail "python ext: the _core extension builds here" "$P/build-ext.log"; tail -5 "$P/build-ext.log"
    for n in "python columns" "python command" "python pytest tests/python"; do
      skip "$n" "the extension did not build"
    done
  fi
  unset TRACESMITH_INJECT_LIB
fi
if want inproc; then
  # Issue #43 (gpu/inproc_names_check.py): 10 bf16 training steps (Linear layers, backward on
  # torch's autograd thread) captured in process with `with tracesmith.profile()` (native
  # frames named when it stops) and by `tracesmith profile --capture-range=cudaProfilerApi`:
  # analyze's call sites the same, within a few points, and no bare module+0x... call site over
  # 1% of GPU time; a symbolize=False capture: analyze names the fix once, `tracesmith
  # symbolize` fixes it. (Without torch each mode prints its SKIP lines.)
  I=$OUT/inproc; mkdir -p "$I"
  INPROC_PY=(python3 gpu/inproc_names_check.py)
  export PYTHONPATH=$PWD/python TRACESMITH_INJECT_LIB=$(realpath "$BUILD/lib/libtracesmith-inject.so")
  pycheck "inproc run (in process)" "$I/inproc.log" "${INPROC_PY[@]}" inproc "$I"
  pycheck "inproc run (tracesmith profile)" "$I/cli.log" "$TS" profile -f \
    --capture-range=cudaProfilerApi -o "$I/cli.sbt" -- "${INPROC_PY[@]}" cli "$I"
  pycheck "inproc check" "$I/check.log" "${INPROC_PY[@]}" check "$TS" "$I"
  grep -hE "^tracesmith: .*(native frames|time limit)" "$I/inproc.log" "$I/cli.log"
  unset PYTHONPATH TRACESMITH_INJECT_LIB
fi
if want memory; then
  # The memory profiler on PyTorch (gpu/memory_check.py): the caching allocator's peak
  # and end equal torch.cuda.max_memory_reserved()/memory_reserved(), a deliberate
  # leak is found with its Python line, every allocation has a stack.
  M=$OUT/memory; mkdir -p "$M"
  # CUDA IPC across two processes (gpu/programs/ipc_pair.cu): the parent cudaMalloc's a
  # buffer and spawns a fresh exec of itself with the handle; the child opens it
  # (ts_ipc_open), checks the pattern, closes it (ts_ipc_close). Each process writes its
  # own file (ipc.sbt: the parent, the first to record; ipc.pid<PID>.sbt: the child).
  # Expected: the child's trace has exactly one ipc_open (op=9) at the pointer it printed,
  # with ts_ipc_open on its stack, and one ipc_close (op=10) at the same address; the
  # parent's none; `memory` on the child's file: imported_bytes 0 at the end and no live
  # device memory (imports are counted apart, never live). Seen 2026-11-25 (H100): every
  # row check right, the memory line FAIL: MEMORY2 also reports the import as a 1 MiB
  # device alloc/free (the open's and the close's correlation ids), counted live
  # (docs/memory.md, "Checked on the GPU").
  rm -f "$M"/ipc.sbt "$M"/ipc.pid*.sbt
  "$TS" profile -q -f -o "$M/ipc.sbt" -- "$PROGS/ipc_pair" --ipc > "$M/ipc.out" 2>&1
  ipc_rc=$?
  sed 's/^/GPU-CHECK memory ipc out: /' "$M/ipc.out"
  child_pid=$(sed -n 's/^ipc_pair: child pid \([0-9]*\) opened 0x[0-9a-f]*$/\1/p' "$M/ipc.out" | head -1)
  child_ptr=$(sed -n 's/^ipc_pair: child pid [0-9]* opened \(0x[0-9a-f]*\)$/\1/p' "$M/ipc.out" | head -1)
  CF=$M/ipc.pid${child_pid:-none}.sbt
  echo "GPU-CHECK memory ipc files: $(cd "$M" && ls ipc*.sbt 2>/dev/null | tr '\n' ' ')(child: $(basename "$CF"))"
  "$TS" view "$CF" -k memory -n 1000 > "$M/ipc-child-view.txt" 2>&1
  "$TS" view "$CF" -k memory -n 1000 --stacks > "$M/ipc-child-stacks.txt" 2>&1
  # --single: the parent's file alone (its name stands for the run, the child's file too).
  "$TS" view --single "$M/ipc.sbt" -k memory -n 1000 > "$M/ipc-parent-view.txt" 2>&1
  sed 's/^/GPU-CHECK memory ipc child view: /' "$M/ipc-child-stacks.txt" | head -40
  grep -E ' op=(9|10)( |$)' "$M/ipc-parent-view.txt" | sed 's/^/GPU-CHECK memory ipc parent IPC row: /'
  echo "GPU-CHECK memory ipc parent memory rows: $(grep -c ' memory ' "$M/ipc-parent-view.txt")"
  ipc_open=$(grep -cE ' op=9( |$)' "$M/ipc-child-view.txt")
  ipc_close=$(grep -cE ' op=10( |$)' "$M/ipc-child-view.txt")
  named_open=$(grep -c 'IPC open device' "$M/ipc-child-view.txt")
  named_close=$(grep -c 'IPC close device' "$M/ipc-child-view.txt")
  open_addr=$(grep -E ' op=9( |$)' "$M/ipc-child-view.txt" | sed -n 's/.* address=\([0-9]*\) .*/\1/p' | head -1)
  close_addr=$(grep -E ' op=10( |$)' "$M/ipc-child-view.txt" | sed -n 's/.* address=\([0-9]*\) .*/\1/p' | head -1)
  address_match=0
  [ -n "$child_ptr" ] && [ -n "$open_addr" ] && [ "$open_addr" = "$(printf '%u' "$child_ptr")" ] &&
    [ "$close_addr" = "$open_addr" ] && address_match=1
  # The stack printed under the (first) op=9 row names ts_ipc_open.
  stack_named=$(awk '/ op=9( |$)/ { s = 1; next } s && /^ +at / { if (/ts_ipc_open/) n = 1; next } { s = 0 }
                     END { print n + 0 }' "$M/ipc-child-stacks.txt")
  parent_ipc=$(grep -cE ' op=(9|10)( |$)' "$M/ipc-parent-view.txt")
  [ -s "$M/ipc-parent-view.txt" ] && grep -q 'START(us)' "$M/ipc-parent-view.txt" || parent_ipc=unreadable
  "$TS" memory "$CF" --json > "$M/ipc-child-memory.json" 2> "$M/ipc-child-memory.err"
  "$TS" memory "$CF" > "$M/ipc-child-memory.txt" 2>&1
  mem_line=$(python3 - "$M/ipc-child-memory.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"imported_bytes=? live_peak=? live_end=? allocs=? (json: {e})"); sys.exit(0)
keys = d.get("memory", [])
imp = sum(k["imported_bytes"] for k in keys)
peak = sum(k["peak_bytes"] for k in keys)
end = sum(k["end_bytes"] for k in keys)
allocs = sum(k["allocs"] for k in keys)
spaces = ",".join(f'{k["space"]}:pid{k["pid"]}' for k in keys) or "none"
print(f"imported_bytes={imp} live_peak={peak} live_end={end} allocs={allocs} keys={spaces}")
EOF
)
  check "memory ipc: the child's trace has one ipc_open and one ipc_close, named, at the child's pointer, ts_ipc_open on the open's stack, none in the parent's, the program done (open=$ipc_open close=$ipc_close address_match=$address_match stack_named=$stack_named parent_ipc_rows=$parent_ipc names=$named_open/$named_close child_ptr=${child_ptr:-?} open_address=${open_addr:-?} close_address=${close_addr:-?} program_exit=$ipc_rc)" \
    $([ "$ipc_rc" = 0 ] && [ "$ipc_open" = 1 ] && [ "$ipc_close" = 1 ] && [ "$named_open" = 1 ] &&
      [ "$named_close" = 1 ] && [ "$address_match" = 1 ] && [ "$stack_named" = 1 ] &&
      [ "$parent_ipc" = 0 ] && grep -q '^ipc_pair: done$' "$M/ipc.out"; echo $?)
  check "memory ipc memory: no imported bytes, nothing live on the child ($mem_line)" \
    $([[ "$mem_line" == "imported_bytes=0 live_peak=0 live_end=0 allocs=0 "* ]]; echo $?)
  if needs_torch "memory run (the PyTorch workload under tracesmith profile)" \
      "memory check (gpu/memory_check.py)"; then
    "$TS" profile -q -f -o "$M/mem.sbt" -- python3 gpu/memory_check.py run "$M" > "$M/run.log" 2>&1
    code=$?
    grep MEMCHECK "$M/run.log"
    check "memory run (the PyTorch workload under tracesmith profile) exits 0" $code
    pycheck "memory check (gpu/memory_check.py)" "$M/check.log" \
      python3 gpu/memory_check.py check "$TS" "$M"
    "$TS" memory "$M/mem.sbt" > "$M/memory.txt" 2>&1
    "$TS" export "$M/mem.sbt" -f perfetto -o "$M/mem.pftrace" --force -q
    check "memory export -f perfetto of the run ($(stat -c %s "$M/mem.pftrace" 2>/dev/null || echo 0) bytes)" \
      $([ -s "$M/mem.pftrace" ]; echo $?)
    "$TS" export "$M/mem.sbt" -f json -o "$M/mem.json" --force -q && gzip -9f "$M/mem.json"
    check "memory export -f json of the run (mem.json.gz)" $([ -s "$M/mem.json.gz" ]; echo $?)
    rm -f "$M/mem.pftrace"
  fi
fi

if want example && needs_torch "example trace (5 PyTorch MLP steps)"; then
  # Small real traces: a few PyTorch training steps.
  "$TS" profile -f -o "$OUT/mlp_train.sbt" -- python3 bench/workloads/torch_mlp_train.py --steps 5
  check "example trace (5 PyTorch MLP steps) recorded, exit 0" $?
  "$TS" info "$OUT/mlp_train.sbt" | head -40
  # The quick start's trace (examples/traces/transformer_step.sbt): 6 bf16 Transformer steps.
  "$TS" profile -f -o "$OUT/transformer_step.sbt" -- \
    python3 bench/workloads/torch_transformer_train.py --steps 6
  check "example trace (6 bf16 Transformer steps) recorded, exit 0" $?
  "$TS" info "$OUT/transformer_step.sbt" | sed -n '/^Capture cost/,$p'
fi

FLOOR=$(realpath "$BUILD/lib/libcupti-floor.so")
BENCH=(python3 bench/overhead.py --tracesmith "$TS" --launch-loop "$PROGS/launch_loop"
       --api-costs "$PROGS/api_costs" --cupti-floor "$FLOOR" --rounds "$ROUNDS")
if want selfcost; then
  # The capture's own accounting on each workload (info's "Capture cost").
  {
    for w in "ll:$PROGS/launch_loop 200000 1" "mlp:python3 bench/workloads/torch_mlp_train.py" \
             "xf:python3 bench/workloads/torch_transformer_train.py"; do
      name=${w%%:*}
      [ "$name" = ll ] || needs_torch "selfcost $name" || continue
      "$TS" profile -q -f -o "$TS_GPU_OUT/cost_$name.sbt" -- ${w#*:} > "$TS_GPU_OUT/cost_$name.out" 2>&1
      code=$?
      tail -1 "$TS_GPU_OUT/cost_$name.out"
      echo "GPU-CHECK selfcost $name:"; "$TS" info "$TS_GPU_OUT/cost_$name.sbt" | sed -n '/^Capture cost/,$p'
      check "selfcost $name: the workload under tracesmith profile exits 0" $code
    done
  } > "$OUT/selfcost.log" 2>&1
  cat "$OUT/selfcost.log"
fi
if want apicost; then
  # Per-call cost of the CUDA calls PyTorch makes, bare / under CUPTI / under tracesmith.
  {
    for c in base "cupti kernel" "cupti kernel,sync" "cupti kernel,runtime" \
             "ts --kinds kernel --stacks none" "ts --kinds kernel,runtime --stacks none" \
             "ts --kinds kernel,sync --stacks none" "ts --kinds kernel,memcpy,memset --stacks none" \
             "ts --kinds kernel,memory --stacks none" "ts --kinds kernel,nvtx --stacks none" \
             "ts --kinds kernel,overhead --stacks none" "ts --kinds kernel,external --stacks none" \
             "ts --kinds kernel,module --stacks none" "ts --kinds kernel,driver-launch --stacks none" \
             "ts --stacks none" "ts"; do
      echo "== api_costs $c"
      case $c in
        base) "$PROGS/api_costs" 20000 ;;
        cupti*) CUDA_INJECTION64_PATH=$FLOOR CUPTI_FLOOR_KINDS=${c#cupti } "$PROGS/api_costs" 20000 ;;
        ts*) "$TS" profile -q -f ${c#ts} -o "$TS_GPU_OUT/api.sbt" -- "$PROGS/api_costs" 20000 ;;
      esac
      check "apicost $c: api_costs exits 0" $?
    done
  } > "$OUT/api_costs.log" 2>&1
  cat "$OUT/api_costs.log"
fi
if want pcsampling; then
  # GPU instruction sampling (issue #39, gpu/pc_sampling_check.py): profile --pc-sampling on
  # three kernels of known behaviour on two streams: a hot loop's samples on its line, memory
  # and compute stall reasons, sample shares against GPU-time shares, kernels still concurrent,
  # loop time against the default capture. Reads the trace with the Python package's _core
  # (built here by the python section, or now).
  S=$OUT/pcsampling; mkdir -p "$S"
  PKG=$OUT/python/pkg
  if [ ! -d "$PKG" ]; then
    mkdir -p "$OUT/python"
    gpu/build-python-ext.sh "$BUILD" "$PKG" python3 > "$S/build-ext.log" 2>&1 || true
  fi
  pycheck "pcsampling" "$S/check.log" env PYTHONPATH="$PKG" python3 gpu/pc_sampling_check.py \
    "$TS" "$PROGS" "$S"
  # --kernel-timeout on a hung and a long kernel; CUDA-graph and Triton kernels' samples.
  mkdir -p "$S/more"
  pycheck "pcsampling more" "$S/more.log" python3 gpu/pc_sampling_more_check.py \
    "$TS" "$PROGS" "$S/more"
fi
if want abcost && needs_torch "abcost (gpu/inproc_ab.py)"; then
  # What --gpu-metrics (#40: <= 3%) and --pc-sampling (#39: <= 10%) add to the bf16 Transformer
  # step, measured inside one process (gpu/inproc_ab.py: separate processes of one configuration
  # differ by up to 25% on this CPU-bound step): ABCOST_ROUNDS (8) rounds of none / default /
  # option blocks, each run of ABCOST_RUNS an OPTION[:compile][:batchN][:periodN][:sleepN][:hwbufN][:drainN][:chunkN]
  # (torch.compile'd model; N sequences a step, 16 by default: 128 makes the step GPU-bound;
  # pc_sampling's period 2^N cycles, its CUPTI worker's sleep N ms, its hardware buffer N MiB,
  # a GetData round every N ms, N PC records per GetData: a sweep); for pc_sampling, the
  # samples of an ABCOST_SAMPLE_STEPS-step block (30) too. ABCOST_OPTION_ENV="KEY=VALUE ..." is
  # set while the option's captures start: with OPTION "capture" (the default capture again) the
  # A/B of a tuning knob (TRACESMITH_BATCH_THREADS=0), with pc_sampling a sweep
  # (TRACESMITH_PC_SAMPLING_SLEEP_MS=10). Opt-in: ~1-3 minutes per run.
  S=$OUT/abcost; mkdir -p "$S"
  export PYTHONPATH=$PWD/python TRACESMITH_INJECT_LIB=$(realpath "$BUILD/lib/libtracesmith-inject.so")
  for r in ${ABCOST_RUNS:-gpu_metrics pc_sampling pc_sampling:compile}; do
    extra=()
    [[ $r == *:compile* ]] && extra+=(--compile)
    [[ $r =~ :batch([0-9]+) ]] && extra+=(--batch "${BASH_REMATCH[1]}")
    [[ $r =~ :period([0-9]+) ]] && extra+=(--period "${BASH_REMATCH[1]}")
    [[ $r =~ :sleep([0-9]+) ]] && extra+=(--option-env "TRACESMITH_PC_SAMPLING_SLEEP_MS=${BASH_REMATCH[1]}")
    [[ $r =~ :hwbuf([0-9]+) ]] && extra+=(--option-env "TRACESMITH_PC_SAMPLING_HW_BUFFER_MB=${BASH_REMATCH[1]}")
    [[ $r =~ :drain([0-9]+) ]] && extra+=(--option-env "TRACESMITH_PC_SAMPLING_DRAIN_MS=${BASH_REMATCH[1]}")
    [[ $r =~ :chunk([0-9]+) ]] && extra+=(--option-env "TRACESMITH_PC_SAMPLING_DRAIN_PCS=${BASH_REMATCH[1]}")
    for kv in ${ABCOST_OPTION_ENV:-}; do extra+=(--option-env "$kv"); done
    pycheck "abcost $r" "$S/${r//:/_}.log" python3 gpu/inproc_ab.py "$S/${r//:/_}" \
      --option "${r%%:*}" "${extra[@]}" --rounds "${ABCOST_ROUNDS:-8}" --budget "${ABCOST_BUDGET:-150}" \
      --sample-steps "${ABCOST_SAMPLE_STEPS:-30}" --cli "$TS"
  done
  unset PYTHONPATH TRACESMITH_INJECT_LIB
  # Where each run's cost sits (kernel durations, GPU idle, launch calls: gpu/cost_where.py, on
  # the last round's default and option traces; figures only).
  PKG=$OUT/python/pkg
  if [ ! -d "$PKG" ]; then
    mkdir -p "$OUT/python"
    gpu/build-python-ext.sh "$BUILD" "$PKG" python3 > "$S/build-ext.log" 2>&1 || true
  fi
  runs=(); for r in ${ABCOST_RUNS:-gpu_metrics pc_sampling pc_sampling:compile}; do runs+=("$S/${r//:/_}"); done
  PYTHONPATH="$PKG" python3 gpu/cost_where.py "${runs[@]}" 2>&1
fi
if want pcpeers && needs_torch "pcpeers (gpu/pc_peers.py)"; then
  # PC sampling against its peers (issue #39 "Cost", gpu/pc_peers.py; opt-in: ~8 minutes, a
  # device call of its own): the bf16 Transformer step bare, under the default capture and under
  # --pc-sampling (PCPEERS_ROUNDS interleaved rounds of PCPEERS_STEPS steps), then once under
  # `ncu --section SourceCounters` (one step's kernels profiled; the full run extrapolated) and
  # once under Triton's Proton in PC-sampling mode. Verdicts: --pc-sampling's step <= 1.10x the
  # default capture's (median of per-round ratios), >= 1,000 samples for every kernel with >= 1%
  # of GPU time, ncu and Proton ran; the table says how many times faster ours is.
  S=$OUT/pcpeers; mkdir -p "$S"
  pycheck "pcpeers" "$S/check.log" python3 gpu/pc_peers.py "$TS" "$S" \
    --steps "${PCPEERS_STEPS:-30}" --rounds "${PCPEERS_ROUNDS:-5}" --budget "${PCPEERS_BUDGET:-480}" \
    ${PCPEERS_COMPILE:+--compile}
fi
if want sasscounts; then
  # Exact instruction counts (issue #39 item 5, gpu/sass_counts_check.py): profile --sass-counts
  # on kernels whose counts are known (a loop of N iterations over a known grid, warp-uniform
  # branches), against ncu's smsp__sass_inst_executed.sum when ncu is there; the refusal with
  # --pc-sampling; the loop time with and without --sass-counts (interleaved rounds).
  S=$OUT/sasscounts; mkdir -p "$S"
  pycheck "sasscounts" "$S/check.log" python3 gpu/sass_counts_check.py "$TS" "$PROGS" "$S"
fi
if want gpumetrics; then
  # GPU hardware metrics over time (issue #40, gpu/gpu_metrics_check.py): profile --gpu-metrics
  # on a DRAM-bound copy, a bf16 GEMM and an FMA chain with idle gaps between; the metric list;
  # an unknown metric name; the loop time with and without (GPUMETRICS_ROUNDS, default 3).
  S=$OUT/gpumetrics; mkdir -p "$S"
  pycheck "gpumetrics" "$S/check.log" python3 gpu/gpu_metrics_check.py "$TS" "$PROGS" "$S"
fi
if want replaymetrics; then
  # A launch's hardware counters from a replay capture (issue #40 item 3,
  # gpu/replay_metrics_check.py): replay --metrics of dram_copy and fma_chain against Nsight
  # Compute on the same launches; the roofline verdicts; an unknown metric name.
  S=$OUT/replaymetrics; mkdir -p "$S"
  pycheck "replaymetrics" "$S/check.log" python3 gpu/replay_metrics_check.py "$TS" "$PROGS" "$S"
fi
if want stalls; then
  # The capture's stalls on the program's threads (issue #41 item 2, gpu/stall_check.py): a
  # 2,000,000-launch loop and (with torch) 40 Transformer steps, with zeroed ready buffers (the
  # default) and with CUPTI zeroing them (TRACESMITH_BUFFER_PREFAULT=0), 2 interleaved rounds
  # (~4 min): no 'activity buffer request' row and no launch callback over 100 us, and at most
  # 100 us of first-time work (rules, interning, a thread's bounds and rings) in one callback.
  S=$OUT/stalls; mkdir -p "$S"
  pycheck "stalls" "$S/check.log" python3 gpu/stall_check.py "$TS" "$PROGS" "$S" \
    --rounds "${STALLS_ROUNDS:-2}"
fi
if want compiledlines; then
  # torch.compile's model lines (issue #41 item 1, gpu/compiled_lines_check.py): a compiled
  # block under `tracesmith profile`; analyze names its kernels by the model's lines, not by
  # Inductor's generated code. Skips visibly without torch.
  pycheck "compiledlines" "$OUT/compiledlines.log" python3 gpu/compiled_lines_check.py "$TS" \
    "$OUT/compiledlines"
fi
if want appevents; then
  # The program's own events (issue #42, gpu/app_events_check.py): a torch training loop calls
  # tracesmith.counter("loss", ...) and range("eval") every step under `tracesmith profile`:
  # every call recorded, values exact, per step in analyze, in the Perfetto and Kineto exports.
  # Skips visibly (SKIP lines) without torch.
  # The package with its extensions built for this machine's Python (as pcsampling does).
  S=$OUT/appevents; mkdir -p "$S"
  PKG=$OUT/python/pkg
  if [ ! -f "$PKG/tracesmith/_app$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" ]; then
    mkdir -p "$OUT/python"
    gpu/build-python-ext.sh "$BUILD" "$PKG" python3 > "$S/build-ext.log" 2>&1 || true
  fi
  pycheck "appevents" "$S/check.log" env PYTHONPATH="$PKG" python3 gpu/app_events_check.py "$TS" "$S"
fi
if want job && needs_torch "job run (3 gloo ranks on one GPU)" "job check (gpu/job_check.py)"; then
  # A distributed run on one GPU: 3 gloo ranks, rank 1 slowed (issue #17).
  J=$TS_GPU_OUT/job; rm -rf "$J"; mkdir -p "$J"
  # JOB_PC_SAMPLING=1: the same run with --pc-sampling (three processes sampling one GPU).
  "$TS" profile -q -f -o "$J/job.sbt" ${JOB_PC_SAMPLING:+--pc-sampling} -- \
    torchrun --standalone --nproc_per_node=3 \
    gpu/job_check.py worker "$J" 10 20 > "$OUT/job_run.log" 2>&1
  code=$?
  grep -E "JOBCHECK|rror" "$OUT/job_run.log" | tail -8
  check "job run (3 gloo ranks on one GPU) under tracesmith profile exits 0" $code
  pycheck "job check (gpu/job_check.py)" "$OUT/job.log" python3 gpu/job_check.py check "$TS" "$J" 10 20
  "$TS" analyze "$J/job.sbt" 2>&1 | tail -40 > "$OUT/job_analyze.txt"
fi
if want nccl; then
  # NCCL on 2 or 4 GPUs (issues #18, #41 item 4): all-reduce loop at 3 sizes, DDP with a
  # rank slowed on the host, a collective mix, grouped calls; one rank per GPU, 4 when the
  # machine has 4 or more (nvidia-h200-x4), else 2 (nvidia-h200-x2).
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  # The GPUs this process may use: CUDA_VISIBLE_DEVICES's list when it is set.
  [ -n "${CUDA_VISIBLE_DEVICES-}" ] && ngpu=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
  world=$(( ngpu >= 4 ? 4 : 2 ))
  if [ "$ngpu" -lt 2 ]; then
    skip "nccl (NCCL runs on 2 or 4 GPUs, gpu/nccl_job_check.py)" \
      "$ngpu GPU; needs two or four: nvidia-h200-x2, nvidia-h200-x4"
  elif needs_torch "nccl (NCCL runs on $world GPUs, gpu/nccl_job_check.py)"; then
    export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
    N=$TS_GPU_OUT/nccl; rm -rf "$N"; mkdir -p "$N"
    TR=(torchrun --standalone --nproc_per_node=$world gpu/nccl_job_check.py)
    # The check's ITERS is both the all-reduce loop's and the mix's count.
    # arpc: the all-reduce loop again under --pc-sampling (issue #39: each rank samples its GPU).
    # ar: rank 0 writes what the program measures itself (CUDA events) to ar_measured.json.
    # grp: NCCL's grouped calls (coalesced all-reduces, batch_isend_irecv).
    for r in "ar:allreduce 20 $N/ar_measured.json" "ddp:ddp 20 15" "mix:mix 20" "arpc:allreduce 20" \
             "grp:group 20"; do
      # arpc unquiet: its lines on each rank's SASS ("SASS of N of M sampled instructions").
      extra=(-q); label=""; [ "${r%%:*}" = arpc ] && extra=(--pc-sampling) && label=" --pc-sampling"
      "$TS" profile -f "${extra[@]}" -o "$N/${r%%:*}.sbt" -- "${TR[@]}" ${r#*:} \
        > "$N/${r%%:*}.log" 2>&1
      code=$?
      tail -3 "$N/${r%%:*}.log"
      grep -E "SASS|modules|cubin" "$N/${r%%:*}.log" | head -8
      check "nccl run ${r#*:} ($world ranks) under tracesmith profile$label exits 0" $code
    done
    pycheck "nccl check (gpu/nccl_job_check.py, $world ranks)" "$OUT/nccl.log" \
      python3 gpu/nccl_job_check.py check "$TS" "$N" 20 20 15 "$world"
    "$TS" analyze "$N/ddp.sbt" 2>&1 | sed -n '/== Job/,$p' > "$OUT/nccl_ddp_analyze.txt"
    "$TS" analyze "$N/ar.sbt" 2>&1 | sed -n '/Bandwidth/,/^$/p' > "$OUT/nccl_ar_bandwidth.txt"
    # HTA's distributed analyses run on this machine's return (scripts/hta-job.py, HTA is
    # not installed here): the DDP and all-reduce runs' Kineto JSON, one file per rank.
    for x in ddp ar; do
      "$TS" export -q -f kineto --force -o "$OUT/nccl_kineto_$x/" "$N/$x.sbt"
      check "nccl kineto export of the $x run ($world rank files for HTA) exits 0" $?
    done
  fi
fi
if want launchcost; then
  # Host ns per cudaLaunchKernel, one short process per configuration, interleaved: what
  # CUPTI's parts and ours each add to one launch (LAUNCH_CONFIGS replaces the list).
  "${BENCH[@]}" --workloads launch --rounds "${LAUNCH_ROUNDS:-10}" --json "$OUT/launchcost.json" \
    --tag LAUNCHCOST --configs "${LAUNCH_CONFIGS:-base=base;;cupti_kernel=cupti:kernel;;\
cupti_kernel_launchcb=cupti:kernel,launch-callback;;cupti_kernel_runtime=cupti:kernel,runtime;;\
cupti_kernel_runtime_launchcb=cupti:kernel,runtime,launch-callback;;\
ts_kernel=ts:--kinds kernel --stacks none;;ts_-runtime_nostacks=ts:--kinds -runtime --stacks none;;\
ts_-runtime=ts:--kinds -runtime;;ts_nostacks=ts:--stacks none;;tracesmith=ts:}" \
    2>&1 | tee "$OUT/launchcost.log"
  check "launchcost: bench/overhead.py --workloads launch exits 0" "${PIPESTATUS[0]}"
fi
# uses_torch LIST: a workload list of bench/overhead.py naming a PyTorch workload.
uses_torch() { [[ ",$1," =~ ,(pyll|mlp|xf), ]]; }
if want bench && { ! uses_torch "${BENCH_WORKLOADS:-ll,pyll,mlp,xf}" ||
                   needs_torch "bench: bench/overhead.py --set main"; }; then
  # The issue-#12 table: floors, defaults, --stacks none, torch.profiler.
  "${BENCH[@]}" --set main --workloads "${BENCH_WORKLOADS:-ll,pyll,mlp,xf}" --json "$OUT/bench.json" \
    2>&1 | tee "$OUT/bench.log"
  check "bench: bench/overhead.py --set main exits 0" "${PIPESTATUS[0]}"
fi
if want pccost && { ! uses_torch "${PCCOST_WORKLOADS:-xf,mlp}" ||
                    needs_torch "pccost: bench/overhead.py --set pcsampling"; }; then
  # What --pc-sampling costs on top of the default capture (issue #39's <= 10%).
  "${BENCH[@]}" --set pcsampling --workloads "${PCCOST_WORKLOADS:-xf,mlp}" \
    --rounds "${PCCOST_ROUNDS:-4}" --json "$OUT/pccost.json" --tag PCCOST \
    2>&1 | tee "$OUT/pccost.log"
  check "pccost: bench/overhead.py --set pcsampling exits 0" "${PIPESTATUS[0]}"
fi
if want metricscost && { ! uses_torch "${METRICSCOST_WORKLOADS:-xf}" ||
                         needs_torch "metricscost: bench/overhead.py --set gpumetrics"; }; then
  # What --gpu-metrics costs on top of the default capture (issue #40's <= 3% on the bf16
  # Transformer step at the default interval).
  "${BENCH[@]}" --set gpumetrics --workloads "${METRICSCOST_WORKLOADS:-xf}" \
    --rounds "${METRICSCOST_ROUNDS:-4}" --json "$OUT/metricscost.json" --tag METRICSCOST \
    2>&1 | tee "$OUT/metricscost.log"
  check "metricscost: bench/overhead.py --set gpumetrics exits 0" "${PIPESTATUS[0]}"
fi
if want sweep && { ! uses_torch "${SWEEP_WORKLOADS:-xf}" ||
                   needs_torch "sweep: bench/overhead.py --set groups"; }; then
  # What each activity group costs on top of --kinds kernel, and CUPTI's own share.
  "${BENCH[@]}" --set groups --workloads "${SWEEP_WORKLOADS:-xf}" --json "$OUT/sweep.json" --tag SWEEP \
    2>&1 | tee "$OUT/sweep.log"
  check "sweep: bench/overhead.py --set groups exits 0" "${PIPESTATUS[0]}"
fi
finish
