#!/usr/bin/env bash
# The main job: set up, build, and ask whether the seed's 100B GPT trains on one GPU of a DGX-2 with ZeRO-Infinity.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
bash "$root/scripts/build.sh" "$root/build" -DZEROSIM_WITH_BENCH=OFF >/dev/null
set +e
"$root/build/bin/zerosim" fit --model gpt-100b --hardware dgx2 --gpus-per-node 1 --ds-config zero3-offload-nvme "$@"
rc=$?
set -e
# 0 fits, 1 does not fit: both are answers; 2 is bad input.
[ $rc -le 1 ] || exit $rc
