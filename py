#!/usr/bin/env bash
# fake python3: $1=-u $2=script
case $2 in
*proton_run.py) echo "PROTON_TRITON 3.6.0 TRITON_CUPTI_LIB_PATH=$TRITON_CUPTI_LIB_PATH"
  if [ -z "$TRITON_CUPTI_LIB_PATH" ]; then echo "RuntimeError: libcupti not found"; exit 1; fi
  echo 'PROTON_API start(name, backend="cupti", mode="pcsampling")'; sleep 1; echo "steps=$4 step_ms=812.0 cpu_ms=5"; touch $5.hatchet; exit 0 ;;
*) sleep 0.2; echo "steps=${4} step_ms=12.$(( RANDOM % 9 )) cpu_ms=8.0" ;;
esac
