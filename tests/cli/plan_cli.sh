#!/usr/bin/env bash
# `zerosim plan`: summary and JSON (docs/PLAN.md keys, strings for streams/kinds/phases), byte-identical output,
# exit 1 when infeasible naming the op, 2 on bad input; every shipped model x config on one profile agrees with fit.
set -u
bin="$1"; root="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL $*"; fail=$((fail+1)); }

# Summary: op counts per phase, bytes per link direction, peak per tier.
"$bin" plan --model gpt-100b --hardware dgx2 --gpus-per-node 1 --ds-config zero3-offload-nvme --summary >"$tmp/s" 2>&1
rc=$?; [ $rc -eq 0 ] || err "100B NVMe plan rc=$rc"
for frag in "ops per rank:" "forward" "backward" "optimizer" "bytes per step per rank: H2D" "NVMe read" "NVMe write" \
            "network" "peak per tier:" "gpu " "cpu " "nvme " "verdict: FITS (tightest tier"; do
  grep -qF -- "$frag" "$tmp/s" || err "summary lacks '$frag'"
done

# JSON: the documented keys; two runs give the same bytes.
for sched in deepspeed dpu overlap; do
  "$bin" plan --model gpt2-124m --hardware dgx-a100-80gb --gpus-per-node 4 --ds-config zero3-offload-cpu \
    --schedule $sched --json "$tmp/a.json" || err "json $sched rc=$?"
  "$bin" plan --model gpt2-124m --hardware dgx-a100-80gb --gpus-per-node 4 --ds-config zero3-offload-cpu \
    --schedule $sched --json "$tmp/b.json" || err "json $sched rc=$? (2nd)"
  cmp -s "$tmp/a.json" "$tmp/b.json" || err "plan JSON differs between two runs ($sched)"
  python3 - "$tmp/a.json" "$sched" <<'EOF' || err "json keys ($sched)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schedule"] == sys.argv[2]
assert d["ranks"] == 4 and d["represented_ranks"] == 1
for k in ("gpu", "cpu", "nvme"): assert k in d["peak_bytes"], k
for k in ("h2d", "d2h", "nvme_read", "nvme_write", "network"): assert k in d["per_step_bytes"], k
streams = {"compute", "h2d", "d2h", "nvme_read", "nvme_write", "comm", "cpu_adam"}
phases = {"forward", "backward", "optimizer"}
assert len(d["ops"]) > 100
for i, op in enumerate(d["ops"]):
    for k in ("id", "rank", "stream", "kind", "layer", "phase", "tensor", "bytes", "flops", "deps"): assert k in op, k
    assert op["id"] == i and op["stream"] in streams and op["phase"] in phases and isinstance(op["kind"], str)
    assert all(x < i for x in op["deps"])
    if op["tensor"] >= 0: assert op["tensor"] + op["tensor_count"] <= len(d["tensors"])
kinds = {op["kind"] for op in d["ops"]}
assert {"forward", "backward", "allgather", "reduce_scatter", "h2d", "d2h", "adam_cpu", "release"} <= kinds, kinds
# The layout section: one entry per parameter, in the tensors' order; groups tile the parameters; ZeRO-3 shares
# are ceil(numel / 4); the lp tensors' homes are the layout's (persistent ones on the GPU).
lay = d["layout"]
n = len(lay["params"])
assert lay["stage"] == 3 and lay["world"] == 4 and n > 0 and len(d["tensors"]) >= 6 * n
for i, p in enumerate(lay["params"]):
    t = d["tensors"][i]
    assert t["name"] == p["name"] and p["part"] == (p["numel"] + 3) // 4
    assert t["home"] == ("gpu" if p["persistent"] else p["lp_home"]), p
    g = lay["groups"][p["group"]]
    assert g["first"] <= i < g["last"]
    assert d["tensors"][2 * n + i]["home"] == g["tier"]
ends = [g["first"] for g in lay["groups"][1:]] + [n]
assert [g["last"] for g in lay["groups"]] == ends and lay["groups"][0]["first"] == 0
assert sum(g["elements"] for g in lay["groups"]) == lay["partition_elements"]
EOF
done
"$bin" plan --model tiny --ds-config zero2 --json - >"$tmp/stdout.json" || err "json to stdout rc=$?"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/stdout.json" || err "--json - is not JSON"

# Infeasible: exit 1, the reason names the op; bad input: exit 2.
printf '{"train_micro_batch_size_per_gpu": 8, "fp16": {"enabled": true}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}' >"$tmp/big.json"
"$bin" plan --model gpt2-1.5b --hardware rtx4090-workstation --ds-config "$tmp/big.json" >"$tmp/inf" 2>&1; rc=$?
[ $rc -eq 1 ] || err "infeasible plan rc=$rc (want 1)"
grep -qE "verdict: DOES NOT FIT: gpu overflows at op [0-9]+ \(forward layer" "$tmp/inf" || { err "no op named"; cat "$tmp/inf"; }
"$bin" plan --model gpt2-124m --ds-config zero2 --schedule fast >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || err "bad --schedule rc=$rc (want 2)"
"$bin" plan --model nosuchmodel --ds-config zero2 >/dev/null 2>"$tmp/e"; rc=$?
[ $rc -eq 2 ] || err "bad model rc=$rc (want 2)"

# Every shipped model x config on one profile: plan's verdict is fit's, in the same words (FITS / TIGHT /
# DOES NOT FIT; never FEASIBLE).
n=0
word() { sed -nE 's/^verdict: (FITS|TIGHT|DOES NOT FIT)( \(|: ).*/\1/p' "$1"; }
for m in "$root"/models/*.json; do
  for c in "$root"/configs/deepspeed/*.json; do
    n=$((n+1))
    peft=(); grep -q '"quantization_config"' "$m" && peft=(--peft "$root/configs/peft/qlora-r64-all-linear.json")
    "$bin" plan --model "$m" "${peft[@]}" --hardware dgx2 --ds-config "$c" >"$tmp/p" 2>"$tmp/e"; prc=$?
    "$bin" fit --model "$m" "${peft[@]}" --hardware dgx2 --ds-config "$c" >"$tmp/f" 2>&1; frc=$?
    [ $prc -le 1 ] || { err "plan rc=$prc for $m $c"; cat "$tmp/e"; }
    [ $prc -eq $frc ] || err "plan rc=$prc but fit rc=$frc for $m $c"
    pw=$(word "$tmp/p"); fw=$(word "$tmp/f")
    [ -n "$pw" ] && [ "$pw" = "$fw" ] || err "plan says '$pw', fit says '$fw' for $m $c"
    ! grep -q FEASIBLE "$tmp/p" || err "plan still says FEASIBLE for $m $c"
  done
done
echo "plan_cli: $n shipped combinations, $fail failures"
[ $fail -eq 0 ] && [ $n -ge 90 ]
