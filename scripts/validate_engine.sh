#!/usr/bin/env bash
# Engine vs simulator on this machine (docs/ENGINE.md "Validation", docs/notes/engine-validation.md "Engine"): probe the machine,
# then per config and repeat: train on the host device (writing the host device's kernel rates into the profile and
# the most typical step's trace), simulate with that profile, compare. Prints the per-phase errors of every run
# and the median |error| of its compute ops.
#   scripts/validate_engine.sh [BUILD_DIR] [REPEATS]
set -eu
build="${1:-build}"; reps="${2:-3}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$build/bin/zerosim"
out=$(mktemp -d /tmp/zs_validate_XXXXXX)
mkdir -p "$out/nvme"
"$bin" probe --nvme-path "$out/nvme" -o "$out/probe.json" >/dev/null
printf "%-32s %3s %10s %10s %9s %9s %9s %9s %9s\n" "model, config" run "pred ms" "meas ms" step fwd bwd opt "|op|"
for row in "tiny tiny-zero2-offload 64 40" "tiny tiny-zero3-nvme 64 40" "$root/tests/data/engine/small.json tiny-zero2-offload 64 24" \
           "$root/tests/data/engine/small.json tiny-zero3-nvme 64 24"; do
  set -- $row
  model="$1"; cfg="$2"; seq="$3"; steps="$4"
  c="$root/tests/data/engine/$cfg.json"
  for r in $(seq 1 "$reps"); do
    "$bin" train --model "$model" --hardware "$out/probe.json" --ds-config "$c" --device host --seq-len "$seq" \
      --steps "$steps" --write-device-profile "$out/host.json" --trace "$out/meas.json" >/dev/null
    "$bin" simulate --model "$model" --hardware "$out/host.json" --ds-config "$c" --seq-len "$seq" \
      --raw-trace "$out/pred.json" >/dev/null
    "$bin" compare "$out/pred.json" "$out/meas.json" --json >"$out/cmp.json"
    python3 - "$out/cmp.json" "$(basename "$model" .json), $cfg" "$r" "$out/rows.jsonl" "$out/pred.json" "$out/meas.json" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
s, p = d["step_time_s"], d["phases"]
e = lambda k: "%+8.1f%%" % (100 * p[k]["error"])
# Op by op: the median |error| of the compute ops (rank 0, matched by op id).
ev = lambda f: {x["op"]: x["end_s"] - x["start_s"] for x in json.load(open(f))["events"]
                if x["rank"] == 0 and x["kind"] in ("forward", "backward", "recompute")}
pr, me = ev(sys.argv[5]), ev(sys.argv[6])
ops = statistics.median(abs(pr[k] / me[k] - 1) for k in pr if me.get(k, 0) > 0)
print("%-32s %3s %10.2f %10.2f %+8.1f%% %s %s %s %8.1f%%" % (sys.argv[2], sys.argv[3], 1e3 * s["predicted"],
      1e3 * s["measured"], 100 * s["error"], e("forward_s"), e("backward_s"), e("optimizer_s"), 100 * ops))
row = {"config": sys.argv[2], "step": s, "ops": ops}
row.update({k: p[k] for k in ("forward_s", "backward_s", "optimizer_s")})
open(sys.argv[4], "a").write(json.dumps(row) + "\n")
PY
  done
done
# Per config: the median error over the repeats, and how far the measured phase itself moved between them.
python3 - "$out/rows.jsonl" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
print("\nmedian error over the repeats; in brackets the measured phase's spread between repeats, (max - min) / median;")
print("|op|: the median over the repeats of each run's median |error| over its compute ops")
for c in dict.fromkeys(r["config"] for r in rows):
    rs = [r for r in rows if r["config"] == c]
    cell = lambda k: "%+7.1f%% [%3.0f%%]" % (100 * st.median(r[k]["error"] for r in rs), 100 * (
        max(r[k]["measured"] for r in rs) - min(r[k]["measured"] for r in rs)) / st.median(r[k]["measured"] for r in rs))
    print("%-32s step %s  fwd %s  bwd %s  opt %s  |op| %5.1f%%" % (c, cell("step"), cell("forward_s"), cell("backward_s"),
          cell("optimizer_s"), 100 * st.median(r["ops"] for r in rs)))
PY
rm -rf "$out"
