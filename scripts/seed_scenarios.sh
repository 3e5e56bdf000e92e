#!/usr/bin/env bash
# Prints the README's table of the seed's three scenarios: `zerosim simulate` per schedule, side by side.
#   scripts/seed_scenarios.sh [build/bin/zerosim]
set -euo pipefail
zs="${1:-build/bin/zerosim}"
run() {  # label, schedule, simulate args...
  local label="$1" sched="$2"; shift 2
  "$zs" simulate "$@" --schedule "$sched" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
label, sched = sys.argv[1], sys.argv[2]
print("| %s | %s | %.3g s | %.1f | %.0f%% | %s |" % (label, sched, j["step_time_s"], j["tflops_per_gpu"],
                                                   100 * j["mfu"], j["bottleneck"]))
' "$label" "$sched"
}
echo "| scenario | schedule | step time | TFLOPS/GPU (model) | MFU | bottleneck |"
echo "|---|---|---|---|---|---|"
for s in deepspeed dpu overlap; do
  run "1.5B GPT-2, 8 × V100 (DGX-2), ZeRO-1" "$s" -m gpt2-1.5b --hardware dgx2 --gpus-per-node 8 -c zero1
done
for s in deepspeed dpu overlap; do
  run "1.5B GPT-2, 8 × V100 (DGX-2), ZeRO-2" "$s" -m gpt2-1.5b --hardware dgx2 --gpus-per-node 8 -c zero2
done
for s in deepspeed dpu overlap; do
  run "10B GPT-2, 1 × V100-32GB, ZeRO-Offload" "$s" -m gpt2-10b --hardware v100-32gb-workstation \
    -c zero2-offload-cpu --checkpoint-activations
done
for s in deepspeed dpu overlap; do
  run "100B GPT, 1 × V100 (DGX-2), ZeRO-Infinity" "$s" -m gpt-100b --hardware dgx2 --gpus-per-node 1 \
    -c zero3-offload-nvme
done
