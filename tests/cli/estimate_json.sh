#!/usr/bin/env bash
# `zerosim estimate --json` rows match DeepSpeed's formulas (1.5B, 1 GPU: ZeRO-2 offload row = 2P per GPU, 24P per CPU).
set -eu
bin="$1"
out=$("$bin" estimate --stage 2 --params 1.5e9 --json)
python3 -c 'import json,sys
d=json.load(sys.stdin); r=d["rows"]
assert len(r)==2 and r[0]["offload_optimizer"]=="cpu" and r[0]["offload_param"] is None
assert r[0]["per_gpu_bytes"]==3000000000 and r[0]["per_cpu_bytes"]==36000000000, r[0]
assert r[1]["per_gpu_bytes"]==30000000000, r[1]' <<<"$out"
out=$("$bin" estimate --stage 3 --model gpt2-1.5b --json)
python3 -c 'import json,sys
d=json.load(sys.stdin); r=d["rows"]
assert len(r)==6 and r[0]["offload_param"]=="cpu" and r[0]["zero_init"] is True
assert r[0]["per_gpu_bytes"]==4*80411200, r[0]' <<<"$out"
"$bin" estimate --stage 3 --params 1e11 --largest-layer-params 514631680 | grep -q "2514.57GiB"
echo "estimate_json: ok"
