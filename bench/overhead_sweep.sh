#!/usr/bin/env bash
# Which capture settings cost what: each configuration against the baseline,
# interleaved round by round, medians and ratios, on the launch loop and the
# PyTorch training step (GPU machine).
#   bench/overhead_sweep.sh TRACESMITH_BIN LAUNCH_LOOP_BIN CUPTI_FLOOR_SO [ROUNDS=5]
# Configurations: base; CUPTI alone (bench/cupti_floor: kernel, kernel+runtime);
# tracesmith with --kinds kernel / kernel,memcpy,memset,sync / default, stacks
# off; tracesmith defaults (stacks on).
set -u
TS=$1 LL=$2 FLOOR=$3 ROUNDS=${4:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=${TMPDIR:-/tmp}/ts-sweep.$$; mkdir -p "$TMP"
configs=(
  "base||"
  "cupti_kernel||CUDA_INJECTION64_PATH=$FLOOR CUPTI_FLOOR_KINDS=kernel"
  "cupti_kernel_runtime||CUDA_INJECTION64_PATH=$FLOOR CUPTI_FLOOR_KINDS=kernel,runtime"
  "ts_kernel|--kinds kernel --stacks none|"
  "ts_gpu_kinds|--kinds kernel,memcpy,memset,sync --stacks none|"
  "ts_default_nostacks|--stacks none|"
  "ts_default|--stacks auto|"
)
for r in $(seq 1 "$ROUNDS"); do
  for w in ll mlp; do
    for c in "${configs[@]}"; do
      IFS='|' read -r name opts envs <<<"$c"
      if [ $w = ll ]; then cmd=("$LL" 200000 1); key=seconds; else
        cmd=(python3 "$HERE/workloads/torch_mlp_train.py" --steps 50); key=step_ms; fi
      if [[ $name == ts_* ]]; then
        out=$(env $envs "$TS" profile -q -f $opts -o "$TMP/t.sbt" -- "${cmd[@]}" 2>/dev/null)
      else
        out=$(env $envs "${cmd[@]}" 2>/dev/null)
      fi
      v=$(echo "$out" | sed -n "s/.*$key=\([0-9.]*\).*/\1/p" | tail -1)
      [ -n "$v" ] && echo "$w $name $v" | tee -a "$TMP/r"
    done
  done
done
python3 - "$TMP/r" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    w, k, v = line.split()
    vals.setdefault((w, k), []).append(float(v))
for w in ("ll", "mlp"):
    b = statistics.median(vals[(w, "base")])
    for (ww, k), v in vals.items():
        if ww != w: continue
        m = statistics.median(v)
        print(f"SWEEP {w:3s} {k:22s} median={m:.4f} ratio={m / b:.3f}x n={len(v)}")
PY
rm -rf "$TMP"
