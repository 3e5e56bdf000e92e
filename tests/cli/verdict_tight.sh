#!/usr/bin/env bash
# One verdict vocabulary: under 3% headroom (core::kTightHeadroomFraction) is TIGHT, not FITS, in fit's text and
# JSON ("fits": true kept, "verdict": "tight") and in plan's summary; 5% is FITS; over capacity is DOES NOT FIT.
# The GPU of a copied hardware profile is sized around what the model needs, so the test follows the memory model.
set -u
bin="$1"; root="$2"
command -v jq >/dev/null || { echo "verdict_tight: jq is not installed (scripts/setup.sh installs it)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL $*"; fail=$((fail+1)); }
m=gpt2-124m; c=zero2; hw="$root/configs/hardware/rtx4090-workstation.json"
need=$("$bin" fit -m $m --hardware "$hw" -c $c --json | jq .tiers.gpu.required_bytes)
[ "$need" -gt 0 ] || { echo "FAIL no GPU requirement"; exit 1; }
# used: required / capacity; the expected words of fit and plan, exit code, JSON fits and verdict.
for row in "0.985 TIGHT 0 true tight" "0.95 FITS 0 true fits" "1.01 DOES_NOT_FIT 1 false does_not_fit"; do
  read -r used word rc_want fits_want verdict_want <<<"$row"
  word=${word//_/ }
  jq --argjson gib "$(jq -n "$need / $used / 1073741824")" '.gpu.memory_GiB = $gib' "$hw" >"$tmp/hw.json"
  "$bin" fit -m $m --hardware "$tmp/hw.json" -c $c >"$tmp/fit.txt"; rc=$?
  [ $rc -eq "$rc_want" ] || err "fit at $used of capacity: rc=$rc, want $rc_want"
  grep -q "^verdict: $word[ :(]" "$tmp/fit.txt" || { err "fit at $used: no 'verdict: $word'"; grep verdict "$tmp/fit.txt"; }
  "$bin" fit -m $m --hardware "$tmp/hw.json" -c $c --json >"$tmp/fit.json"
  [ "$(jq -c '[.fits, .verdict]' "$tmp/fit.json")" = "[$fits_want,\"$verdict_want\"]" ] ||
    err "fit --json at $used: $(jq -c '[.fits, .verdict]' "$tmp/fit.json"), want [$fits_want,\"$verdict_want\"]"
  "$bin" plan -m $m --hardware "$tmp/hw.json" -c $c >"$tmp/plan.txt"; rc=$?
  [ $rc -eq "$rc_want" ] || err "plan at $used: rc=$rc, want $rc_want"
  grep -q "^verdict: $word[ :(]" "$tmp/plan.txt" || { err "plan at $used: no 'verdict: $word'"; grep verdict "$tmp/plan.txt"; }
done
[ $fail -eq 0 ] && echo "verdict_tight: ok" || exit 1
