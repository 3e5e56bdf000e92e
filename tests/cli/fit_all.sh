#!/usr/bin/env bash
# Every shipped model x hardware x config goes through `zerosim fit --json` without error:
# exit 0 (fits) or 1 (does not fit), valid JSON with the documented keys; never 2, 3 or a crash.
set -u
bin="$1"; root="$2"
fail=0; n=0
for m in "$root"/models/*.json; do
  for h in "$root"/configs/hardware/*.json; do
    for c in "$root"/configs/deepspeed/*.json; do
      n=$((n+1))
      out=$("$bin" fit --model "$m" --hardware "$h" --ds-config "$c" --json 2>/tmp/zs_fit_all_err)
      rc=$?
      if [ $rc -gt 1 ]; then
        echo "FAIL rc=$rc: fit --model $m --hardware $h --ds-config $c"; cat /tmp/zs_fit_all_err; fail=$((fail+1)); continue
      fi
      if ! python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in ("fits","binding_tier","model","tiers","suggestions","deepspeed_estimate","resolved_config"): assert k in d, k
for t in ("gpu","cpu","nvme"): assert {"required_bytes","capacity_bytes","breakdown"} <= set(d["tiers"][t]), t
assert d["fits"] == (sys.argv[1] == "0"), "exit code disagrees with fits"
assert d["tiers"]["gpu"]["required_bytes"] > 0
' "$rc" <<<"$out"; then
        echo "FAIL json: fit --model $m --hardware $h --ds-config $c"; fail=$((fail+1))
      fi
    done
  done
done
echo "fit_all: $n combinations, $fail failures"
[ $fail -eq 0 ] && [ $n -ge 300 ]
