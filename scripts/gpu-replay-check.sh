#!/usr/bin/env bash
# GPU replay checks, run on the GPU machine from the repository root with a
# build folder made on the development machine:
#   scripts/gpu-replay-check.sh [BUILD]      (default build/replay-gpu)
# BUILD holds bin/tracesmith, bin/replay_make_capture,
# lib/libtracesmith-replay-gpu.so and gpu/replay_kernels.cubin (see
# src/replay/README.md for how to make it); the test programs come from
# TS_GPU_BIN (default BUILD/gpu-programs, gpu/build-programs.sh). Everything goes
# to $OUT/replay-check.log (OUT defaults to ./replay-check-logs).
#
# One line per check, PASS, FAIL or SKIP (with the reason: a program not built,
# torch not importable; every check of a skipped section is listed), then one
# summary line "N passed, M failed, K skipped" (scripts/lib/checks.sh). Exit
# status 1 when a check failed or a section expected on this machine was skipped
# (a GPU is present and a program is missing; torch imports but has no CUDA),
# else 0.
#   REPLAY_ONLY=oom          the out-of-memory check alone (a short device call)
#   REPLAY_ONLY=torchgraph   the PyTorch CUDA graph's reproducer alone
#   REPLAY_ONLY=S1,S2,...    these sections only: core kernel_count launch_attrs
#                            pointer_chase graph torch_graph torch_mlp torch_streams
#                            torch_ops triton
# (TS_HAVE_GPU, TS_TORCH_STATE, TS_TRITON_STATE override what the machine has:
# tests/scripts/test_gpu_checks.py runs this with a fake tracesmith.)
set -u
. "$(dirname "$0")/lib/checks.sh"
B=${1:-build/replay-gpu}
OUT=${OUT:-$PWD/replay-check-logs}
mkdir -p "$OUT"
LOG=$OUT/replay-check.log
TS=$B/bin/tracesmith
MK=$B/bin/replay_make_capture
CUBIN=$B/gpu/replay_kernels.cubin
PROGS=${TS_GPU_BIN:-$B/gpu-programs}
W=$(mktemp -d)

graph_check() {  # graph_check NAME CONDITION-STATUS: a check line with the GRAPH prefix
  check "GRAPH: $1" "$2"
}
run() {  # run LABEL CMD...: prints the command and its output; sets $rc (skip mode: not run)
  if skipping; then rc=125; : > "$W/last.log"; return; fi
  echo "--- $1: ${*:2}"
  "${@:2}" > "$W/last.log" 2>&1
  rc=$?
  cat "$W/last.log"
  echo "(exit $rc)"
}
live() { ! skipping; }  # informational commands run only outside skip mode

# section NAME WHY EXPECTED: runs sec_NAME; with a reason (WHY non-empty) in skip
# mode, each of its checks a SKIP line with the reason.
section() {
  [ -n "$2" ] && skip_mode "$2" "$3"
  "sec_$1"
  skip_mode_off
}
prog_why() {  # the reason a program's section cannot run, or nothing
  [ -x "$TS" ] || { echo "$TS not built"; return; }
  [ -x "$PROGS/$1" ] || echo "$PROGS/$1 not built (gpu/build-programs.sh)"
}
torch_why() {
  [ -x "$TS" ] || { echo "$TS not built"; return; }
  case $TORCH in
    cuda) ;;
    nocuda) echo "torch imports but torch.cuda.is_available() is False" ;;
    *) echo "torch does not import" ;;
  esac
}
torch_expected() {
  if [ ! -x "$TS" ] || [ "$TORCH" = nocuda ]; then gpu_expected; else echo 0; fi
}

# Not enough device memory (#15 item 5): another process (gpu/programs/memory_hog.cu)
# holds all but a context's worth plus 32 MiB; the PyTorch MLP's launches 0-59
# ($W/rc_torch.sbt, 80+ MiB) cannot be mapped: the replay says what it needed,
# what was free and what to do, and exits 5 (a CUDA error), without hanging.
oom_check() {
  local n1="not enough device memory: range 0..59 refused naming the launches, what they need and what is free (exit 5)"
  local n2="not enough device memory: all 60 launches refused in --json (error names them and --launch N, exit 5)"
  if skipping; then check "$n1" 1; check "$n2" 1; return; fi
  if [ ! -x "$PROGS/memory_hog" ]; then
    skip "$n1" "$PROGS/memory_hog not built" "$(gpu_expected)"
    skip "$n2" "$PROGS/memory_hog not built" "$(gpu_expected)"
    return
  fi
  if [ ! -f "$W/rc_torch.sbt" ]; then
    fail "$n1" "the PyTorch capture rc_torch.sbt was not written"
    fail "$n2" "the PyTorch capture rc_torch.sbt was not written"
    return
  fi
  "$PROGS/memory_hog" 32 90 > "$W/hog.log" 2>&1 &
  local hog=$!
  for _ in $(seq 1 150); do grep -q "holding\|only" "$W/hog.log" && break; sleep 0.2; done
  echo "--- memory_hog: $(cat "$W/hog.log")"
  run rc-torch-oom-range "$TS" replay "$W/rc_torch.sbt" --range 0:59
  check "$n1" \
    $([ $rc -eq 5 ] && grep -q "not enough device memory to replay launches 0..59: it needs .* in [0-9]* range(s) at once .*, and the GPU has .* free of " "$W/last.log"; echo $?)
  run rc-torch-oom-all "$TS" replay "$W/rc_torch.sbt" --json
  [ $rc -eq 5 ] && python3 - "$W/last.log" <<'PY'
import json, re, sys
t = open(sys.argv[1]).read()  # stderr's error line, then the document
d = json.loads(t[re.search(r"^\{", t, re.M).start():])
e = d.get("error") or ""
print("oom json error:", e[:200])
sys.exit(0 if "not enough device memory to replay all 60 recorded launches" in e
         and "replay one launch at a time with --launch N" in e
         and d["summary"]["exit_code"] == 5 else 1)
PY
  check "$n2" $?
  kill "$hog" 2>/dev/null
  wait "$hog" 2>/dev/null
}

# The PyTorch CUDA graph's last graph launch as a one-launch reproducer
# (#15 item 3 for item 2's PyTorch case), replayed in a fresh process.
torch_graph_extract() {
  local g=
  if live; then
    g=$(grep -oE "^launch [0-9]+  graph launch \(" "$W/last.log" | tail -1 | awk '{print $2}')
    [ -n "$g" ] || g=$("$TS" replay "$W/rc_torch_graph.sbt" --iterations 1 2>&1 |
      grep -oE "^launch [0-9]+  graph launch \(" | tail -1 | awk '{print $2}')
  fi
  run rc-torch-graph-extract "$TS" replay "$W/rc_torch_graph.sbt" --extract "${g:-0}" \
    -o "$W/repro_torch_graph.sbt"
  run rc-torch-graph-repro "$TS" replay "$W/repro_torch_graph.sbt" --iterations 3
  graph_check "PyTorch CUDAGraph: graph launch ${g:-?}'s --extract reproducer replays identical and deterministic on its own" \
    $([ $rc -eq 0 ] && grep -q "^launch ${g:-x}  graph launch (" "$W/last.log" &&
      replay_all_ok "$W/last.log" 1 3; echo $?)
}

# 1-5: pointers in device structs, nondeterminism, --json, --warm, a foreign
# architecture, a truncated capture, --same-addresses-only (replay_make_capture's
# kernels, gpu/replay_kernels.cubin).
sec_core() {
# 1. Pointers inside device structs: replayed at the captured addresses (another
#    process's cuMemAlloc ranges), bit-identical.
run capture-follow "$MK" --cubin "$CUBIN" --variant follow -o "$W/follow.sbt" --check-taken
check "follow_list captured; replay in the capturing process refused with 'already taken'" \
  $([ $rc -eq 0 ] && grep -q "address-taken check: PASS" "$W/last.log"; echo $?)
run replay-follow "$TS" replay "$W/follow.sbt" --iterations 5
check "follow_list replays at the captured addresses, identical to the capture, 5 replays deterministic" \
  $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1 5 &&
    grep -q "all 2 ranges at their captured addresses" "$W/last.log"; echo $?)

# 2. Float atomics with colliding indices: nondeterministic over 20 replays.
run capture-scatter "$MK" --cubin "$CUBIN" --variant scatter -o "$W/scatter.sbt"
check "scatter_add captured" $rc
run replay-scatter "$TS" replay "$W/scatter.sbt" --iterations 20
check "scatter_add reported NONDETERMINISTIC over 20 replays (exit 4)" \
  $([ $rc -eq 4 ] && grep -q "determinism: NONDETERMINISTIC: [1-9][0-9]* of 20 replays differ" "$W/last.log"; echo $?)

# 2b. --json: the same verdicts as one JSON document (docs/replay-format.md,
#     "Results as JSON"); "report" is the text report.
run replay-follow-json "$TS" replay "$W/follow.sbt" --iterations 5 --json
[ $rc -eq 0 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(l,) = d["launches"]
ok = (d["mode"] == "gpu" and d["device"] and l["status"] == "identical" and l["kind"] == "launch"
      and l["output"]["bytes_compared"] > 0 and l["output"]["first_diff_address"] is None
      and l["determinism"] == {"iterations": 5, "deterministic": True, "replays_differing": 0,
                               "vs_first_replay": None}
      and l["addresses"]["ranges"] == 2
      and ("%d at the captured addresses, %d mapped away" % (l["addresses"]["at_captured_address"],
           l["addresses"]["mapped_away"])) in d["device_memory"]
      and l["time"]["median_ns"] > 0 and d["summary"]["exit_code"] == 0 and d["error"] is None
      and "all outputs identical" in d["report"])
sys.exit(0 if ok else 1)
PY
# (A fresh process may find a captured range taken by the driver: it is then
# mapped away and relocated; the document must say which, as the text does.)
check "--json: follow_list one launch identical, deterministic over 5, its 2 ranges at the captured address or mapped away as the device-memory line says, exit 0" $?
run replay-scatter-json "$TS" replay "$W/scatter.sbt" --iterations 20 --json
[ $rc -eq 4 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(l,) = d["launches"]
det = l["determinism"]
ok = (not det["deterministic"] and det["replays_differing"] > 0
      and det["vs_first_replay"]["bytes_differing"] > 0 and d["summary"]["nondeterministic"] == 1
      and d["summary"]["exit_code"] == 4 and "NONDETERMINISTIC" in d["report"])
sys.exit(0 if ok else 1)
PY
check "--json: scatter_add nondeterministic (replays_differing > 0, summary exit 4)" $?

# 2c. --warm (docs/replay-format.md, "Timing"): cold times (inputs restored, L2
#     flushed) and warm times (back to back, inputs not restored), and the
#     idempotence verdict. follow_list writes `out` from its inputs only:
#     idempotent. scatter_add accumulates into dst with float atomics: re-run on
#     its own output the sums double, beyond its rounding nondeterminism: NOT
#     idempotent (and still nondeterministic, exit 4).
run replay-follow-warm "$TS" replay "$W/follow.sbt" --iterations 5 --warm
check "--warm: follow_list idempotent, cold and warm CUPTI times over 5 runs, exit 0" \
  $([ $rc -eq 0 ] && grep -q "kernel time, cold L2 (CUPTI): .* over 5 replays" "$W/last.log" &&
    grep -q "^  idempotent: re-run on its own outputs, it wrote them again bit for bit$" "$W/last.log" &&
    grep -q "kernel time, warm L2 (CUPTI): .* over 5 back-to-back runs" "$W/last.log"; echo $?)
run replay-scatter-warm "$TS" replay "$W/scatter.sbt" --iterations 20 --warm
check "--warm: scatter_add NOT IDEMPOTENT (changes beyond its nondeterminism), still NONDETERMINISTIC (exit 4)" \
  $([ $rc -eq 4 ] && grep -q "NONDETERMINISTIC" "$W/last.log" &&
    grep -q "^  NOT IDEMPOTENT: re-run on its own outputs" "$W/last.log" &&
    grep -q "kernel time, warm L2, on changed inputs, not comparable with the program" "$W/last.log"; echo $?)
run replay-warm-json "$TS" replay "$W/follow.sbt" --iterations 5 --warm --json
[ $rc -eq 0 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(l,) = d["launches"]
w = l["warm"]
ok = (d["options"]["warm"] is True and l["time"]["l2_flushed"] is True and w["runs"] == 5
      and w["idempotence"] == "idempotent" and w["rerun_vs_outputs"]["bytes_differing"] == 0
      and w["rerun_vs_outputs"]["bytes_compared"] == l["output"]["bytes_compared"] > 0
      and w["median_ns"] > 0 and w["source"] == l["time"]["source"])
print("follow_list cold %d ns, warm %d ns (%s)" % (l["time"]["median_ns"], w["median_ns"], w["source"]))
sys.exit(0 if ok else 1)
PY
check "--json --warm: follow_list warm object (5 runs, idempotent, re-run compared over every output byte), l2_flushed" $?
run replay-scatter-warm-json "$TS" replay "$W/scatter.sbt" --iterations 20 --warm --json
[ $rc -eq 4 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(l,) = d["launches"]
w = l["warm"]
ok = (w["idempotence"] == "not_idempotent" and w["bytes_beyond_nondeterminism"] > 0
      and w["replay_over_program"] is None and not l["determinism"]["deterministic"])
print("scatter_add: re-run changed %d bytes, %d beyond nondeterminism" %
      (w["rerun_vs_outputs"]["bytes_differing"], w["bytes_beyond_nondeterminism"]))
sys.exit(0 if ok else 1)
PY
check "--json --warm: scatter_add not_idempotent, bytes beyond nondeterminism > 0, no ratio to the program" $?

# 3. A capture from another architecture is refused with a clear message.
run capture-arch "$MK" --cubin "$CUBIN" --variant follow -o "$W/arch.sbt" --claim-sm 80
run replay-arch "$TS" replay "$W/arch.sbt"
check "capture claiming sm_80 refused naming both architectures" \
  $([ $rc -eq 1 ] && grep -q "recorded on .*(sm_80) but this GPU is" "$W/last.log"; echo $?)

# 4. A truncated capture is refused with a message, no crash.
live && head -c $(($(stat -c %s "$W/follow.sbt" 2>/dev/null || echo 0) / 2)) "$W/follow.sbt" \
  > "$W/trunc.sbt" 2>/dev/null
run replay-truncated "$TS" replay "$W/trunc.sbt"
check "truncated capture refused with a message" \
  $([ $rc -eq 1 ] && grep -q "truncated" "$W/last.log"; echo $?)

# 5. --same-addresses-only: succeeds in a fresh process; in the capturing process
#    (addresses taken) the refusal names the range (replay_make_capture --check-taken, check 1).
run replay-same-only "$TS" replay "$W/follow.sbt" --same-addresses-only
check "--same-addresses-only: exit 0, all ranges at the captured addresses" \
  $([ $rc -eq 0 ] && grep -q "all .* ranges at their captured addresses" "$W/last.log"; echo $?)
}

# 6. Replay capture from an unmodified program: tracesmith profile --replay-capture.
sec_kernel_count() {
  run rc-kernel "$TS" profile -f --stacks none --replay-capture 'kernel:scale_kernel' \
    --replay-max-launches 3 -o "$W/rc.sbt" -- "$PROGS/kernel_count" 10
  check "profile --replay-capture kernel:scale_kernel recorded 3 launches" \
    $([ $rc -eq 0 ] && grep -q "replay capture: 3 launch(es) and [0-9]* stream op(s) recorded" "$W/last.log"; echo $?)
  run rc-all-memory "$TS" profile -f --stacks none --replay-capture 'launch:2' --replay-memory all \
    -o "$W/rc_all.sbt" -- "$PROGS/kernel_count" 5
  check "--replay-memory all: the launch snapshots both live allocations (the kernel uses one)" \
    $([ $rc -eq 0 ] && grep -q "launch 2 scale_kernel.*: 2 allocation(s)" "$W/last.log"; echo $?)
  run rc-all-memory-replay "$TS" replay "$W/rc_all.sbt"
  check "--replay-memory all capture replays identical" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1; echo $?)
  run rc-kernel-replay "$TS" replay "$W/rc.sbt" --iterations 3
  check "the 3 captured scale_kernel launches replay identical and deterministic" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 3 3 &&
      [ "$(grep -cE "^launch [0-9]+  [^ ]*scale_kernel" "$W/last.log")" -eq 3 ]; echo $?)
  # scale_kernel: data = data * 0.5 + 1 in place, deterministic: re-run on
  # its own output it changes it, so NOT idempotent, every launch.
  run rc-kernel-warm "$TS" replay "$W/rc.sbt" --iterations 3 --warm
  check "--warm: the 3 scale_kernel launches (in place) NOT IDEMPOTENT, identical and deterministic (exit 0)" \
    $([ $rc -eq 0 ] && [ "$(grep -c "^  NOT IDEMPOTENT: " "$W/last.log")" -eq 3 ] &&
      replay_all_ok "$W/last.log" 3 3; echo $?)
  # The progress line on a terminal (the real library's hooks): the last
  # launch named, the line erased; none when piped (the log above).
  local name="progress line on a terminal: launch 2 (3 of 3) scale_kernel named, erased before each block; none when piped"
  if live && ! command -v script >/dev/null; then
    skip "$name" "no 'script' command to give the replay a terminal"
  else
    : > "$W/tty.log"
    live && TRACESMITH_PROGRESS_DELAY_S=0 script -qec "$TS replay $W/rc.sbt --iterations 50" /dev/null \
      > "$W/tty.log" 2>&1
    check "$name" \
      $(grep -q "tracesmith: replay launch 2 (3 of 3) [^ ]*scale_kernel" "$W/tty.log" &&
        [ "$(grep -cE $'\r\033\\[K(GPU replay of |launch [12]  [^ ]*scale_kernel)' "$W/tty.log")" -eq 3 ] &&
        ! grep -q $'\r' "$W/last.log"; echo $?)
  fi
}

sec_launch_attrs() {
  run rc-attrs "$TS" profile -f --stacks none --replay-capture all -o "$W/rc_attrs.sbt" -- \
    "$PROGS/launch_attrs"
  run rc-attrs-replay "$TS" replay "$W/rc_attrs.sbt" --iterations 3
  check "launch attributes (cudaLaunchKernelEx cooperative + priority, cudaLaunchCooperativeKernel) captured and passed to the replay, identical" \
    $([ $rc -eq 0 ] && grep -q "launch attributes: cooperative, priority" "$W/last.log" &&
      grep -q "launch attributes: cooperative$" "$W/last.log" &&
      replay_all_ok "$W/last.log" 2; echo $?)
}

# 6b. Memory reached through pointers stored in memory (--replay-memory
#     reachable, the default; gpu/programs/pointer_chase.cu).
sec_pointer_chase() {
  run rc-gather "$TS" profile -f --stacks none --replay-capture 'kernel:gather_ptrs' \
    -o "$W/rc_gather.sbt" -- "$PROGS/pointer_chase" gather
  check "pointer table: gather_ptrs captured with 6 allocations, 4 of them reached through the table" \
    $([ $rc -eq 0 ] && grep -q "POINTER_CHASE gather OK" "$W/last.log" &&
      grep -q "gather_ptrs.*: 6 allocation(s) (4 reached through pointers in memory)" "$W/last.log"; echo $?)
  run rc-gather-replay "$TS" replay "$W/rc_gather.sbt" --iterations 3
  check "pointer table: replays identical and deterministic; the report names the 4 buffers reached through the table" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" any 3 &&
      grep -q "2 from the parameters, 4 reached through pointers in memory (16.00 MiB)" "$W/last.log" &&
      grep -q "4 allocations (16.00 MiB) reached through pointers in allocation #[0-9] (0x[0-9a-f]*) at offsets 0x0..0x18" "$W/last.log"; echo $?)
  # A one-launch reproducer of it (--extract) replays identical in a fresh process.
  local gl ll gm
  gl=$(sed -n 's/^launch \([0-9]*\) .*gather_ptrs.*/\1/p' "$W/last.log" | head -1)
  run rc-gather-extract "$TS" replay "$W/rc_gather.sbt" --extract "${gl:-0}" -o "$W/repro_gather.sbt"
  check "pointer table: --extract writes a reproducer of the launch with its 6 ranges, 4 reached through pointers" \
    $([ $rc -eq 0 ] && grep -q "memory: 6 range(s), .* (4 reached through pointers in memory)" "$W/last.log"; echo $?)
  run rc-gather-repro "$TS" replay "$W/repro_gather.sbt" --iterations 3
  check "pointer table: the reproducer replays identical and deterministic on its own" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1 3; echo $?)
  live && ls -l "$W/rc_gather.sbt" "$W/repro_gather.sbt"
  live && "$TS" info "$W/rc_gather.sbt" | grep -E "replay\.(reach|memory_image|snapshot)"  # scan cost (informational)
  run rc-gather-params "$TS" profile -f --stacks none --replay-capture 'kernel:gather_ptrs' \
    --replay-memory params -o "$W/rc_gather_params.sbt" -- "$PROGS/pointer_chase" gather
  run rc-gather-params-replay timeout 120 "$TS" replay "$W/rc_gather_params.sbt"
  check "pointer table with --replay-memory params (the old default): not identical, the replay ends by itself and says to capture with the default" \
    $([ $rc -ne 0 ] && [ $rc -ne 124 ] && ! grep -q "identical to the capture" "$W/last.log" &&
      grep -q "capture again with the default (--replay-memory reachable)" "$W/last.log"; echo $?)
  run rc-list "$TS" profile -f --stacks none --replay-capture 'kernel:walk_list' \
    -o "$W/rc_list.sbt" -- "$PROGS/pointer_chase" list
  check "linked list: walk_list captured with 9 allocations, 7 nodes reached through next pointers" \
    $([ $rc -eq 0 ] && grep -q "POINTER_CHASE list OK" "$W/last.log" &&
      grep -q "walk_list.*: 9 allocation(s) (7 reached through pointers in memory)" "$W/last.log"; echo $?)
  run rc-list-replay "$TS" replay "$W/rc_list.sbt" --iterations 3
  check "linked list: replays identical and deterministic; the last node is 7 pointer hops from a parameter" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" any 3 &&
      grep -q "1 allocation (2.00 MiB) reached through pointers in allocation #[0-9] (0x[0-9a-f]*) at offset 0x8, 7 pointer hops from a parameter" "$W/last.log"; echo $?)
  ll=$(sed -n 's/^launch \([0-9]*\) .*walk_list.*/\1/p' "$W/last.log" | head -1)
  run rc-list-extract "$TS" replay "$W/rc_list.sbt" --extract "${ll:-0}" -o "$W/repro_list.sbt"
  run rc-list-repro "$TS" replay "$W/repro_list.sbt" --iterations 3
  check "linked list: its --extract reproducer replays identical and deterministic on its own" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1 3; echo $?)
  run rc-list-depth "$TS" profile -f --stacks none --replay-capture 'kernel:walk_list' \
    --replay-reach-depth 3 -o "$W/rc_list_d3.sbt" -- "$PROGS/pointer_chase" list
  check "linked list, --replay-reach-depth 3: 3 nodes reached, the next one counted past the depth" \
    $([ $rc -eq 0 ] && grep -q "walk_list.*: 5 allocation(s) (3 reached through pointers in memory)" "$W/last.log" &&
      grep -q "0 allocation(s) (0.0 MiB) over the --replay-max-mb budget, 1 past --replay-reach-depth 3" "$W/last.log"; echo $?)
  run rc-list-depth-replay timeout 120 "$TS" replay "$W/rc_list_d3.sbt"
  check "linked list cut at depth 3: not identical, the replay ends by itself and names what was not recorded" \
    $([ $rc -ne 0 ] && [ $rc -ne 124 ] && ! grep -q "identical to the capture" "$W/last.log" &&
      grep -q "raise --replay-max-mb / --replay-reach-depth" "$W/last.log"; echo $?)
  run rc-gemm "$TS" profile -f --stacks none --replay-capture all --replay-max-launches 8 \
    -o "$W/rc_gemm.sbt" -- "$PROGS/pointer_chase" gemm
  check "cublasSgemmBatched: a launch with the 12 matrices reached through Aarray/Barray/Carray" \
    $([ $rc -eq 0 ] && grep -q "POINTER_CHASE gemm OK" "$W/last.log" &&
      grep -q "(12 reached through pointers in memory)" "$W/last.log"; echo $?)
  run rc-gemm-replay "$TS" replay "$W/rc_gemm.sbt" --iterations 3
  check "cublasSgemmBatched: every captured launch replays identical and deterministic" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" any 3 &&
      grep -q "12 reached through pointers in memory" "$W/last.log"; echo $?)
  live && "$TS" info "$W/rc_gemm.sbt" | grep -E "replay\.(reach|memory_image|snapshot)"  # scan cost (informational)
  gm=$(grep -B30 "12 reached through pointers in memory" "$W/last.log" | sed -n 's/^launch \([0-9]*\) .*/\1/p' | tail -1)
  run rc-gemm-extract "$TS" replay "$W/rc_gemm.sbt" --extract "${gm:-0}" -o "$W/repro_gemm.sbt"
  run rc-gemm-repro "$TS" replay "$W/repro_gemm.sbt" --iterations 3
  check "cublasSgemmBatched: the batched GEMM launch's --extract reproducer replays identical and deterministic on its own" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1 3 &&
      grep -q "12 reached through pointers in memory" "$W/last.log"; echo $?)
}

# 6c. CUDA graphs (#15 item 2; gpu/programs/graph_replay.cu): a graph of 3
#     kernels, a memset and a device-to-device memcpy on two streams, launched
#     3 times (launch indices 3, 4, 5), replayed whole, one node alone, and as
#     a reproducer. Key lines are printed with the prefix "GRAPH:".
sec_graph() {
  local gk
  run rc-graph "$TS" profile -f --stacks none --replay-capture 'kernel:chase_table' \
    -o "$W/rc_graph.sbt" -- "$PROGS/graph_replay"
  grep -E "graph launch [0-9]+ \(|GRAPH_REPLAY" "$W/last.log" | sed 's/^/GRAPH: /'
  graph_check "kernel:chase_table selects the 3 graph launches, each 3 kernels, 1 memset, 1 memcpy, 10 allocations (4 reached through the table), program's results right" \
    $([ $rc -eq 0 ] && grep -q "^GRAPH_REPLAY OK" "$W/last.log" &&
      [ "$(grep -c "graph launch [345] (3 kernels, 1 memset, 1 memcpy): 10 allocation(s)" "$W/last.log")" -eq 3 ]; echo $?)
  run rc-graph-replay "$TS" replay "$W/rc_graph.sbt" --iterations 3
  grep -E "^launch |graph time|output:|determinism:" "$W/last.log" | sed 's/^/GRAPH: /'
  graph_check "the 3 graph launches replay as one unit each, identical to the capture, 3 replays deterministic (exit 0)" \
    $([ $rc -eq 0 ] && [ "$(grep -c "^launch [345]  graph launch (5 nodes: 3 kernels, 1 memset, 1 memcpy)" "$W/last.log")" -eq 3 ] &&
      replay_all_ok "$W/last.log" 3 3; echo $?)
  gk=$(sed -n 's/^  node \([0-9]*\): kernel .*chase_table.*/\1/p' "$W/last.log" | head -1)
  run rc-graph-node "$TS" replay "$W/rc_graph.sbt" --launch 4 --node "${gk:-0}" --iterations 3
  grep -E "^launch |graph node:|output:|determinism:|kernel time" "$W/last.log" | sed 's/^/GRAPH: /'
  graph_check "node chase_table of graph launch 4 alone: inputs rebuilt by its 2 ancestors (fill_values, memset), 3 replays identical, graph's final memory identical to the capture" \
    $([ $rc -eq 0 ] && grep -q "^launch 4  graph launch 4, node ${gk:-x} of 5 (kernel .*chase_table.*): inputs rebuilt by running 2 preceding node(s)" "$W/last.log" &&
      replay_all_ok "$W/last.log" 1 3; echo $?)
  run rc-graph-node-dot "$TS" replay "$W/rc_graph.sbt" --launch "4.${gk:-0}"
  graph_check "--launch G.K is --launch G --node K" \
    $([ $rc -eq 0 ] && grep -q "graph launch 4, node ${gk:-x} of 5" "$W/last.log"; echo $?)
  run rc-graph-range "$TS" replay "$W/rc_graph.sbt" --range 3:5
  graph_check "--range over graph launches refused, naming --launch" \
    $([ $rc -eq 1 ] && grep -q "launch 3 is a graph launch: range replay does not replay graph launches; replay it with --launch 3" "$W/last.log"; echo $?)
  run rc-graph-extract "$TS" replay "$W/rc_graph.sbt" --extract 5 -o "$W/repro_graph.sbt"
  run rc-graph-repro "$TS" replay "$W/repro_graph.sbt" --iterations 3
  graph_check "--extract 5: the graph launch's reproducer replays identical and deterministic on its own" \
    $([ $rc -eq 0 ] && grep -q "^launch 5  graph launch (5 nodes" "$W/last.log" &&
      replay_all_ok "$W/last.log" 1 3; echo $?)
  run rc-graph-launch "$TS" profile -f --stacks none --replay-capture 'launch:4' \
    -o "$W/rc_graph4.sbt" -- "$PROGS/graph_replay"
  run rc-graph-launch-replay "$TS" replay "$W/rc_graph4.sbt" --json
  [ $rc -eq 0 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(l,) = d["launches"]
g = l["graph"]
print("GRAPH: launch:4 json: kind %s, nodes %s, status %s, time %s ns, program %s ns"
      % (l["kind"], g, l["status"], l["time"]["median_ns"], l["time"]["program_ns"]))
ok = (l["kind"] == "graph" and l["index"] == 4 and l["status"] == "identical"
      and l["output"]["bytes_compared"] > 0
      and (g["nodes"], g["kernels"], g["memsets"], g["memcpys"]) == (5, 3, 1, 1)
      and g["node"] is None and l["time"]["median_ns"] > 0 and l["time"]["program_ns"])
sys.exit(0 if ok else 1)
PY
  graph_check "launch:4 selects the second graph launch alone; --json: kind graph, 5 nodes (3 kernels, 1 memset, 1 memcpy), identical, its time in the program known" $?
  # The second graph: captured on a stream first seen after recording began,
  # its first op a memset (the replay capture must not query that stream).
  run rc-graph-fresh "$TS" profile -f --stacks none --replay-capture 'launch:7' \
    -o "$W/rc_graph7.sbt" -- "$PROGS/graph_replay"
  grep -E "graph launch [0-9]+ \(|GRAPH_REPLAY" "$W/last.log" | sed 's/^/GRAPH: fresh stream: /'
  graph_check "a graph captured on a stream created after recording began, its first op a memset: the program's capture intact, results right (exit 0), graph launch 7 recorded (1 kernel, 1 memset)" \
    $([ $rc -eq 0 ] && grep -q "^GRAPH_REPLAY second capture OK" "$W/last.log" &&
      grep -q "^GRAPH_REPLAY OK" "$W/last.log" &&
      grep -q "graph launch 7 (1 kernel, 1 memset" "$W/last.log"; echo $?)
  run rc-graph-fresh-replay "$TS" replay "$W/rc_graph7.sbt" --iterations 3
  grep -E "^launch |output:|determinism:" "$W/last.log" | sed 's/^/GRAPH: fresh stream: /'
  graph_check "graph launch 7 replays identical and deterministic" \
    $([ $rc -eq 0 ] && grep -q "^launch 7  graph launch (2 nodes" "$W/last.log" &&
      replay_all_ok "$W/last.log" 1 3; echo $?)
}

sec_torch_graph() {
  run rc-torch-graph "$TS" profile -f --stacks none --replay-capture all \
    -o "$W/rc_torch_graph.sbt" -- python3 gpu/replay/torch_graph.py
  grep -E "graph launch [0-9]+ \(|TORCH_GRAPH" "$W/last.log" | sed 's/^/GRAPH: /'
  graph_check "PyTorch CUDAGraph: the program's results right, its 4 graph replays recorded (at least 4 graph launches)" \
    $([ $rc -eq 0 ] && grep -q "^TORCH_GRAPH OK" "$W/last.log" &&
      [ "$(grep -c "graph launch [0-9]* (" "$W/last.log")" -ge 4 ]; echo $?)
  run rc-torch-graph-replay "$TS" replay "$W/rc_torch_graph.sbt" --iterations 3
  grep -E "^launch .*graph launch|output:" "$W/last.log" | sed 's/^/GRAPH: /'
  graph_check "PyTorch CUDAGraph: every launch (eager warm-up kernels and the 4 graph launches) replays identical and deterministic (exit 0)" \
    $([ $rc -eq 0 ] && [ "$(grep -c "^launch [0-9]*  graph launch (" "$W/last.log")" -ge 4 ] &&
      replay_all_ok "$W/last.log" any 3; echo $?)
  torch_graph_extract
}

sec_torch_mlp() {
  run rc-torch "$TS" profile -f --replay-capture 'launch:0-59' --replay-max-launches 60 \
    -o "$W/rc_torch.sbt" -- python3 bench/workloads/torch_mlp_train.py --steps 5
  run rc-torch-replay "$TS" replay "$W/rc_torch.sbt" --iterations 3
  live && echo "torch replay: $(grep -c "ranges at their captured addresses" "$W/last.log") at the" \
    "captured addresses, $(grep -c "mapped away from" "$W/last.log") relocated;" \
    "$(replay_identical "$W/last.log") identical," \
    "$(grep -c "DIFFERENT" "$W/last.log") different," \
    "$(grep -c "NONDETERMINISTIC" "$W/last.log") nondeterministic of" \
    "$(replay_launches "$W/last.log") replayed (exit $rc)"
  check "PyTorch MLP launches 0-59 captured and all 60 replayed (exit 0 or 4, no error)" \
    $({ [ $rc -eq 0 ] || [ $rc -eq 4 ]; } && [ "$(replay_launches "$W/last.log")" -eq 60 ]; echo $?)
  check "PyTorch MLP: every launch replayed at the captured addresses (none mapped away)" \
    $([ "$(grep -c "ranges at their captured addresses" "$W/last.log")" -eq 60 ] &&
      ! grep -q "mapped away from" "$W/last.log"; echo $?)
  oom_check
  # Warm and cold over a real step (informational: how many launches are in
  # place, and warm/program against cold/program).
  run rc-torch-warm "$TS" replay "$W/rc_torch.sbt" --iterations 3 --warm --json
  live && python3 - "$W/last.log" <<'PY'
import json, statistics, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(0)
ls = [l for l in d["launches"] if l.get("warm")]
verdicts = {}
for l in ls:
    verdicts[l["warm"]["idempotence"]] = verdicts.get(l["warm"]["idempotence"], 0) + 1
cold = [l["time"]["replay_over_program"] for l in ls if l["time"]["replay_over_program"]]
warm = [l["warm"]["replay_over_program"] for l in ls if l["warm"]["replay_over_program"]]
print("torch --warm: %d launches, verdicts %s; cold/program median %s over %d, warm/program median %s over %d (idempotent ones)"
      % (len(ls), verdicts, statistics.median(cold) if cold else None, len(cold),
         statistics.median(warm) if warm else None, len(warm)))
PY
  run rc-torch-range "$TS" replay "$W/rc_torch.sbt" --range 0:59 --iterations 3
  check "range replay of PyTorch launches 0-59 (forward + backward, one initial state) reproduces the final memory, deterministic" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1 3; echo $?)
  run rc-torch-range-json "$TS" replay "$W/rc_torch.sbt" --range 0:59 --iterations 3 --json
  [ $rc -eq 0 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(l,) = d["launches"]
ok = (l["kind"] == "range" and (l["index"], l["last_index"]) == (0, 59)
      and l["sequence"]["launches"] == 60 and l["status"] == "identical"
      and l["output"]["bytes_compared"] > 0
      and l["determinism"]["deterministic"] and l["time"]["source"] == "host_clock"
      and d["options"]["range"] == [0, 59] and d["summary"]["exit_code"] == 0)
sys.exit(0 if ok else 1)
PY
  check "--json range replay: one entry of kind range 0..59 (60 launches), identical, deterministic, host-clock time" $?
}

sec_torch_streams() {
  local n_params n_all
  run rc-streams "$TS" profile -f --replay-capture all --replay-max-launches 60 \
    -o "$W/rc_streams.sbt" -- python3 gpu/replay/torch_streams.py
  check "PyTorch two-stream forward pass (its checksum printed) captured with its stream ops (launches and stream ops recorded, both > 0)" \
    $([ $rc -eq 0 ] && grep -q "^checksum [0-9]" "$W/last.log" &&
      grep -Eq "replay capture: [1-9][0-9]* launch\(es\)(, [0-9]+ graph launch\(es\))? and [1-9][0-9]* stream op\(s\) recorded" "$W/last.log"; echo $?)
  # Stream-ordered allocations (torch's cudaMallocAsync backend) in --replay-memory all.
  run rc-async-params env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$TS" profile -f \
    --stacks none --replay-capture launch:12 -o "$W/rc_async_p.sbt" -- python3 gpu/replay/torch_streams.py
  n_params=$(grep -o "launch 12 .*: [0-9]* allocation(s)" "$W/last.log" | grep -o "[0-9]* allocation" | cut -d' ' -f1)
  run rc-async-all env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$TS" profile -f \
    --stacks none --replay-capture launch:12 --replay-memory all -o "$W/rc_async.sbt" -- python3 gpu/replay/torch_streams.py
  n_all=$(grep -o "launch 12 .*: [0-9]* allocation(s)" "$W/last.log" | grep -o "[0-9]* allocation" | cut -d' ' -f1)
  live && echo "cudaMallocAsync backend, launch 12: ${n_params:-?} allocation(s) reachable from parameters, ${n_all:-?} live with --replay-memory all"
  run rc-async-replay "$TS" replay "$W/rc_async.sbt"
  check "--replay-memory all sees stream-ordered allocations (cudaMallocAsync backend) and replays identical" \
    $([ -n "$n_params" ] && [ -n "$n_all" ] && [ "$n_all" -gt "$n_params" ] && [ $rc -eq 0 ] &&
      replay_all_ok "$W/last.log" 1; echo $?)
  run rc-streams-range "$TS" replay "$W/rc_streams.sbt" --range 0:100000 --iterations 3
  check "multi-stream range replay (streams + events recreated, copies replayed) reproduces the final memory, deterministic" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 1 3 &&
      grep -Eq "event record/wait and synchronizations\) in capture order on [3-9] stream" "$W/last.log" &&
      ! grep -q "stream ops (0 copies" "$W/last.log"; echo $?)
}

sec_torch_ops() {
  run rc-ops "$TS" profile -f --replay-capture all --replay-max-launches 40 \
    -o "$W/rc_ops.sbt" -- python3 gpu/replay/torch_ops.py
  run rc-ops-replay "$TS" replay "$W/rc_ops.sbt" --iterations 20
  # Per launch: identical (over more than 0 bytes) or not, deterministic or not;
  # the matmul (cuBLAS) and the softmax named apart.
  live && python3 - "$W/last.log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
for idx, name, body in re.findall(r"^launch (\d+)  (\S+)\n(.*?)(?=\nlaunch |\Z)", log, re.S | re.M):
    same = re.search(r"output: identical to the capture \((?!0 B)", body)
    state = ("identical" if same else "DIFFERENT") + (
        ", NONDETERMINISTIC" if "NONDETERMINISTIC" in body else ", deterministic")
    print(f"torch op launch {idx}: {state}: {name[:90]}")
PY
  check "PyTorch matmul (cuBLAS) and softmax: at least one launch of each, every one identical and deterministic over 20 replays" \
    $(live && python3 - "$W/last.log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
blocks = re.findall(r"^launch (\d+)  (\S+)\n(.*?)(?=\nlaunch |\Z)", log, re.S | re.M)
mm = [b for b in blocks if re.search(r"gemm|nvjet|xmma|Kernel2", b[1])]
sm = [b for b in blocks if re.search(r"softmax|SoftMax", b[1])]
good = lambda b: (re.search(r"output: identical to the capture \((?!0 B)", b[2]) is not None
                  and "determinism: 20 replays, all outputs identical" in b[2])
print("matmul:", [b[1][:60] for b in mm], "softmax:", [b[1][:60] for b in sm], file=sys.stderr)
print(0 if mm and sm and all(good(b) for b in mm + sm) else 1)
PY
)
  check "PyTorch float index_add_ with colliding indices reported NONDETERMINISTIC over 20 replays" \
    $(live && python3 - "$W/last.log" <<'PY'
import re, sys
log = open(sys.argv[1]).read()
blocks = re.findall(r"^launch (\d+)  (\S+)\n(.*?)(?=\nlaunch |\Z)", log, re.S | re.M)
want = [b for b in blocks if re.search(r"index", b[1], re.I)]
print(0 if want and any("determinism: NONDETERMINISTIC" in b[2] for b in want) else 1)
PY
)
}

sec_triton() {
  run rc-triton "$TS" profile -f --replay-capture 'kernel:scaled_add_kernel' \
    -o "$W/rc_triton.sbt" -- python3 gpu/replay/triton_add.py
  run rc-triton-replay "$TS" replay "$W/rc_triton.sbt" --iterations 5
  check "Triton kernel: 3 launches captured, replayed identical and deterministic" \
    $([ $rc -eq 0 ] && replay_all_ok "$W/last.log" 3 5; echo $?)
  # out = x * scale + y over 12 MiB (fits the L2): idempotent, and warm (inputs
  # left in the L2 by the run before, as the program's 2nd and 3rd launches
  # found them) faster than cold.
  run rc-triton-warm "$TS" replay "$W/rc_triton.sbt" --iterations 5 --warm --json
  [ $rc -eq 0 ] && python3 - "$W/last.log" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = len(d["launches"]) == 3
for l in d["launches"]:
    t, w = l["time"], l["warm"]
    print("triton launch %d: cold %d ns, warm %d ns, program %s ns, cold/program %s, warm/program %s, %s"
          % (l["index"], t["median_ns"], w["median_ns"], t["program_ns"], t["replay_over_program"],
             w["replay_over_program"], w["idempotence"]))
    ok = ok and w["idempotence"] == "idempotent" and w["median_ns"] < t["median_ns"]
sys.exit(0 if ok else 1)
PY
  check "--warm: Triton scaled_add 3 launches idempotent, warm median below cold (L2)" $?
}

sec_torchgraph_only() {  # REPLAY_ONLY=torchgraph
  run rc-torch-graph "$TS" profile -f --stacks none --replay-capture all \
    -o "$W/rc_torch_graph.sbt" -- python3 gpu/replay/torch_graph.py
  : > "$W/last.log"
  torch_graph_extract
}
sec_oom_only() {  # REPLAY_ONLY=oom
  run rc-torch "$TS" profile -f --replay-capture 'launch:0-59' --replay-max-launches 60 \
    -o "$W/rc_torch.sbt" -- python3 bench/workloads/torch_mlp_train.py --steps 5
  oom_check
}

SECTIONS="core kernel_count launch_attrs pointer_chase graph torch_graph torch_mlp torch_streams torch_ops triton"
want_section() { [ -z "${REPLAY_ONLY:-}" ] || [[ ",$REPLAY_ONLY," == *",$1,"* ]]; }

main() {
date -u
nvidia-smi -L || true
TORCH=$(torch_state)
echo "--- machine: GPU $(have_gpu && echo present || echo absent), torch: $TORCH"
local core_why= triton_why triton_exp
[ -x "$TS" ] || core_why="$TS not built"
[ -n "$core_why" ] || [ -x "$MK" ] || core_why="$MK not built"
[ -n "$core_why" ] || [ -f "$CUBIN" ] || core_why="$CUBIN not built"
triton_why=$(torch_why) triton_exp=$(torch_expected)
if [ -z "$triton_why" ] && [ "${TS_TRITON_STATE:-$(python3 -c 'import triton' 2>/dev/null &&
    echo yes)}" != yes ]; then
  # (PyTorch's CUDA wheels for Linux ship triton: expected where torch has CUDA)
  triton_why="triton does not import, torch with CUDA does" triton_exp=$(gpu_expected)
fi
case ${REPLAY_ONLY:-} in
  torchgraph) section torchgraph_only "$(torch_why)" "$(torch_expected)" ;;
  oom) section oom_only "$(torch_why)" "$(torch_expected)" ;;
  *)
    local s only=${REPLAY_ONLY:-}
    for s in ${only//,/ }; do
      case " $SECTIONS " in *" $s "*) ;; *) fail "REPLAY_ONLY: $s is not a section ($SECTIONS)" ;; esac
    done
    want_section core && section core "$core_why" "$(gpu_expected)"
    want_section kernel_count && section kernel_count "$(prog_why kernel_count)" "$(gpu_expected)"
    want_section launch_attrs && section launch_attrs "$(prog_why launch_attrs)" "$(gpu_expected)"
    want_section pointer_chase &&
      section pointer_chase "$(prog_why pointer_chase)" "$(gpu_expected)"
    want_section graph && section graph "$(prog_why graph_replay)" "$(gpu_expected)"
    want_section torch_graph && section torch_graph "$(torch_why)" "$(torch_expected)"
    want_section torch_mlp && section torch_mlp "$(torch_why)" "$(torch_expected)"
    want_section torch_streams && section torch_streams "$(torch_why)" "$(torch_expected)"
    want_section torch_ops && section torch_ops "$(torch_why)" "$(torch_expected)"
    want_section triton && section triton "$triton_why" "$triton_exp"
    if [ -z "${REPLAY_ONLY:-}" ]; then
      # 7. Where the driver puts address-hinted reservations (informational).
      echo "--- diag: randomize_va_space=$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null) THP=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
      [ -x "$B/bin/replay_va_probe" ] && run diag-va-probe "$B/bin/replay_va_probe"
      # 8. The dry-run on the example trace (CPU only; for the log).
      [ -x "$TS" ] && run dry-run "$TS" replay --dry-run examples/traces/mlp_train.sbt
    fi
    ;;
esac
summary
}

main 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}
rm -rf "$W"
exit $rc
