#!/usr/bin/env bash
# Which capture settings cost what on the launch-bound loop: each config of
# --kinds / tuning knobs against the baseline, interleaved, medians.
#   bench/kinds_sweep.sh TRACESMITH_BIN LAUNCH_LOOP_BIN [ROUNDS=3]
set -u
TS=$1 LL=$2 ROUNDS=${3:-3}
TMP=${TMPDIR:-/tmp}/ts-sweep.$$; mkdir -p "$TMP"
configs=(
  "base"
  "kernel|--kinds kernel"
  "kernel,nosub|--kinds kernel|TRACESMITH_SUBSCRIBE=0"
  "kernel,devbuf32|--kinds kernel|TRACESMITH_DEVICE_BUFFER_MB=32"
  "default|"
  "default,nosub|--kinds default|TRACESMITH_SUBSCRIBE=0"
  "default,devbuf32|--kinds default|TRACESMITH_DEVICE_BUFFER_MB=32"
  "k,mcpy,mset,sync,rt|--kinds kernel,memcpy,memset,sync,runtime"
)
for r in $(seq 1 "$ROUNDS"); do
  for c in "${configs[@]}"; do
    IFS='|' read -r name opts envs <<<"$c"
    if [ "$name" = base ]; then
      out=$("$LL" 200000 1)
    else
      out=$(env $envs "$TS" profile -q -f $opts -o "$TMP/t.sbt" -- "$LL" 200000 1)
    fi
    v=$(echo "$out" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' | tail -1)
    echo "$name $v" >>"$TMP/r"
  done
done
python3 - "$TMP/r" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    k, _, v = line.rpartition(" ")
    if v.strip(): vals.setdefault(k, []).append(float(v))
b = statistics.median(vals["base"])
for k, v in vals.items():
    m = statistics.median(v)
    print(f"SWEEP {k:32s} median={m:.4f}s ratio={m / b:.3f}x all={['%.3f' % x for x in v]}")
PY
rm -rf "$TMP"
