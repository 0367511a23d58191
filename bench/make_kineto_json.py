#!/usr/bin/env python3
"""A torch.profiler-shaped (Kineto) JSON trace of N launch + kernel pairs, for
import scale tests: python3 bench/make_kineto_json.py N OUT.json
(docs/benchmarks.md, "Import")."""
import json, sys
n = int(sys.argv[1])
with open(sys.argv[2], "w") as f:
    f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H100", "totalGlobalMem": 85000000000, "computeMajor": 9, "computeMinor": 0, "numSms": 132}],\n"traceEvents": [\n')
    f.write('{"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "python"}},\n')
    f.write('{"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},\n')
    for i in range(n):
        ts = 1000 + i * 5.0
        f.write('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 7, "ts": %.3f, "dur": 2.5, "args": {"External id": %d, "cbid": 211, "correlation": %d}},\n' % (ts, i, i + 1))
        f.write('{"ph": "X", "cat": "kernel", "name": "void gemm_kernel<float, 128>(float*, float const*)", "pid": 0, "tid": 7, "ts": %.3f, "dur": 3.25, "args": {"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": %d, "registers per thread": 64, "shared memory": 0, "blocks per SM": 1.5, "warps per SM": 8.0, "grid": [128, 1, 1], "block": [256, 1, 1], "est. achieved occupancy %%": 50}},\n' % (ts + 3, i, i + 1))
    f.write('{"ph": "i", "cat": "x", "name": "end", "pid": 100, "tid": 7, "ts": 1.0, "s": "t"}\n],\n"baseTimeNanoseconds": 1700000000000000000}\n')
