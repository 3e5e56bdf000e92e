#!/usr/bin/env bash
# Renders the four tabs of zerosim-gui headless into docs/screenshots/ (the README's pictures).
#   gui/tools/screenshots.sh [BUILD_DIR]      # default build-gui; needs zerosim and zerosim-gui built there
# The Compare tab needs a measured trace. Until `zerosim train --trace` has run on real hardware, a STAND-IN is
# made here: the same plan simulated on the same machine with "measured" figures 20-30% below the simulator's
# defaults (GEMM efficiency, CPU Adam rate, NVMe bandwidth) — it shows the tab, not the simulator's accuracy.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build-gui}"
out="$root/docs/screenshots"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
export QT_QPA_PLATFORM=offscreen

model=llama2-7b; hw=dgx-a100-80gb; cfg=zero3-offload-nvme
python3 - "$root/configs/hardware/$hw.json" "$tmp/standin.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
h["name"] += " (stand-in measurements)"
h["measured"] = {"gemm_efficiency": 0.62, "cpu_adam_params_per_s": 7.6e9,
                 "nvme_read_GBps": 36.0, "nvme_write_GBps": 19.0}
json.dump(h, open(sys.argv[2], "w"), indent=1)
PY
"$build/bin/zerosim" simulate -m $model --hardware "$tmp/standin.json" -c $cfg --raw-trace "$tmp/measured.json" >/dev/null

gui="$build/bin/zerosim-gui"
"$gui" --screenshot "$out/explore.png" --tab explore -m llama2-13b --hardware $hw -c zero2-offload-cpu
"$gui" --screenshot "$out/simulate.png" --tab simulate -m $model --hardware $hw -c $cfg
"$gui" --screenshot "$out/compare.png" --tab compare -m $model --hardware $hw -c $cfg --trace "$tmp/measured.json"
"$gui" --screenshot "$out/sweep.png" --tab sweep -m $model --hardware $hw -c zero3-offload-cpu --checkpoint-activations \
  --sweep-x micro_batch=1,2,4,8,16,32,64 --sweep-y offload_optimizer=none,cpu,nvme
