#!/bin/bash
# Diagnostic (gpu/probes/README.md): run a capture; if it is still alive N s after the program's last
# line, print every thread's state and stacks (gdb or eu-stack when present).
TS=$1; shift; WAIT=$1; shift; LOG=/tmp/hang.out
"$TS" profile -f "$@" > $LOG 2>&1 &
PID=$!
LAST=${LAST:-GPUMETRICS_LOOP}  # the line the program prints last
for i in $(seq 1 120); do grep -q "$LAST" $LOG && break; sleep 1; done
sleep "$WAIT"
if ! kill -0 $PID 2>/dev/null; then echo "HANG: none (exited)"; tail -3 $LOG; exit 0; fi
echo "HANG: alive $WAIT s after the program's last line"; tail -3 $LOG | cut -c1-200
for p in $(pgrep -P $PID) $PID; do
  echo "== pid $p $(cat /proc/$p/comm)"
  for t in /proc/$p/task/*; do echo "  $(basename $t) $(cat $t/comm) state=$(awk '/State/{print $2}' $t/status) wchan=$(cat $t/wchan)"; done
  if command -v gdb >/dev/null; then timeout 60 gdb -p $p -batch -ex "thread apply all bt 25" 2>/dev/null | grep -E "^#|^Thread" | cut -c1-220 | head -150
  elif [ -n "${EU:-}" ]; then timeout 60 env LD_LIBRARY_PATH=$(dirname $EU)/lib $EU -p $p 2>&1 | head -200; else echo "no gdb/eu-stack"; fi
done
kill -9 $PID $(pgrep -P $PID) 2>/dev/null
