#!/usr/bin/env bash
# Renders the four tabs of zerosim-gui headless into docs/screenshots/ (the README's pictures).
#   gui/tools/screenshots.sh [BUILD_DIR]      # default build/; needs zerosim and zerosim-gui built there
# The Compare tab holds a real measured trace: `zerosim train` of a 3.3M-parameter GPT on this machine's host
# device (the engine, ZeRO-Offload), against `simulate` of the same run with this machine's probed figures
# (`zerosim probe`: DRAM, CPU Adam, NVMe) and the host device's measured rates (`train --write-device-profile`),
# as docs/ENGINE.md "Validation" does.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
out="$root/docs/screenshots"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
export QT_QPA_PLATFORM=offscreen

model=llama2-7b; hw=dgx-a100-80gb
small="$root/tests/data/engine/small.json"; small_cfg="$root/tests/data/engine/tiny-zero2-offload.json"
mkdir -p "$tmp/nvme"
"$build/bin/zerosim" probe --nvme-path "$tmp/nvme" -o "$tmp/probe.json" >/dev/null
"$build/bin/zerosim" train --model "$small" --hardware "$tmp/probe.json" --ds-config "$small_cfg" --device host --seq-len 64 \
  --steps 12 --write-device-profile "$tmp/host.json" --trace "$tmp/measured.json" >/dev/null

gui="$build/bin/zerosim-gui"
# Explore: QLoRA of Llama-3-8B on a 24 GB card (the adapter choice and PEFT's trainable-params line).
"$gui" --screenshot "$out/explore.png" --tab explore -m llama3-8b-bnb-4bit --peft "$root/configs/peft/qlora-r64-all-linear.json" \
  --hardware rtx4090-workstation -c zero2 --seq-len 2048 --checkpoint-activations
"$gui" --screenshot "$out/simulate.png" --tab simulate -m $model --hardware $hw -c zero2-offload-cpu
"$gui" --screenshot "$out/compare.png" --tab compare -m "$small" --hardware "$tmp/host.json" -c "$small_cfg" --seq-len 64 \
  --trace "$tmp/measured.json"
"$gui" --screenshot "$out/sweep.png" --tab sweep -m $model --hardware $hw -c zero3-offload-cpu --checkpoint-activations \
  --sweep-x micro_batch=1,2,4,8,16,32,64 --sweep-y offload_optimizer=none,cpu,nvme
