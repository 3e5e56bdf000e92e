#!/usr/bin/env bash
# Every shipped model x hardware x config goes through `zerosim fit --json` without error:
# exit 0 (fits) or 1 (does not fit), valid JSON with the documented keys; never 2, 3 or a crash.
set -u
bin="$1"; root="$2"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
fail=0; n=0
for m in "$root"/models/*.json; do
  for h in "$root"/configs/hardware/*.json; do
    for c in "$root"/configs/deepspeed/*.json; do
      n=$((n+1))
      # A bitsandbytes-quantised base trains only an adapter (QLoRA): fit refuses it without --peft.
      peft=(); grep -q '"quantization_config"' "$m" && peft=(--peft "$root/configs/peft/qlora-r64-all-linear.json")
      "$bin" fit --model "$m" "${peft[@]}" --hardware "$h" --ds-config "$c" --json >"$out/$n.json" 2>"$out/$n.err"
      rc=$?
      echo "$rc $m $h $c" >"$out/$n.rc"
      if [ $rc -gt 1 ]; then
        echo "FAIL rc=$rc: fit --model $m --hardware $h --ds-config $c"; cat "$out/$n.err"; fail=$((fail+1))
      fi
    done
  done
done
# One interpreter checks every report: documented keys present, exit code agrees with "fits".
python3 - "$out" "$n" <<'PY' || fail=$((fail+1))
import json, sys, os
d, n = sys.argv[1], int(sys.argv[2])
bad = 0
for i in range(1, n + 1):
    rc, *what = open(os.path.join(d, f"{i}.rc")).read().split()
    if int(rc) > 1:
        continue
    try:
        r = json.load(open(os.path.join(d, f"{i}.json")))
        for k in ("fits", "binding_tier", "model", "tiers", "suggestions", "deepspeed_estimate", "resolved_config"):
            assert k in r, k
        for t in ("gpu", "cpu", "nvme"):
            assert {"required_bytes", "capacity_bytes", "breakdown"} <= set(r["tiers"][t]), t
            assert sum(r["tiers"][t]["breakdown"].values()) == r["tiers"][t]["required_bytes"], t
        assert r["fits"] == (rc == "0"), "exit code disagrees with fits"
        assert r["tiers"]["gpu"]["required_bytes"] > 0
        assert r["model"]["params"] > 0
    except Exception as e:
        print("FAIL json:", " ".join(what), repr(e)); bad += 1
sys.exit(1 if bad else 0)
PY
echo "fit_all: $n combinations, $fail failures"
[ $fail -eq 0 ] && [ $n -ge 300 ]
