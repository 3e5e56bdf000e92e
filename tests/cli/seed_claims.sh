#!/usr/bin/env bash
# The seed's 100B claim end to end: on one DGX-2 GPU only ZeRO-3 with params and optimizer on NVMe fits,
# and `fit` states the DRAM and NVMe that needs.
set -u
bin="$1"
fail=0
for c in zero0 zero1 zero2 zero3 zero2-offload-cpu zero3-offload-cpu zero3-offload-nvme; do
  "$bin" fit --model gpt-100b --hardware dgx2 --gpus-per-node 1 --ds-config $c >/tmp/zs_seed_out 2>&1; rc=$?
  want=1; [ $c = zero3-offload-nvme ] && want=0
  if [ $rc -ne $want ]; then echo "FAIL $c: rc=$rc want $want"; cat /tmp/zs_seed_out; fail=$((fail+1)); fi
done
"$bin" fit --model gpt-100b --hardware dgx2 --gpus-per-node 1 --ds-config zero3-offload-nvme >/tmp/zs_seed_out
grep -E "^  cpu .*per node" /tmp/zs_seed_out || { echo "FAIL: no CPU line"; fail=$((fail+1)); }
grep -E "^  nvme .*per node" /tmp/zs_seed_out || { echo "FAIL: no NVMe line"; fail=$((fail+1)); }
grep -q "verdict: FITS" /tmp/zs_seed_out || { echo "FAIL: no FITS verdict"; fail=$((fail+1)); }
echo "seed_claims: $fail failures"
[ $fail -eq 0 ]
