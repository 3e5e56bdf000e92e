#!/usr/bin/env bash
# `zerosim train` and `zerosim compare`: progress lines, --json losses, --trace in the trace schema that compare
# reads, checkpoint + --resume continuing bit for bit, refusals (does not fit: exit 1 with fit's report; bad input:
# exit 2), and an NVMe run.
set -u
bin="$1"; root="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL $*"; fail=$((fail+1)); }
cfg="$root/tests/data/engine/tiny-zero2-offload.json"

"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --device host --steps 3 --trace "$tmp/t.json" >"$tmp/out" 2>&1
rc=$?; [ $rc -eq 0 ] || { err "train rc=$rc"; cat "$tmp/out"; }
for frag in "step    0  loss" "tokens/s" "peak gpu" "3 steps: loss" "peak memory" "(plan "; do
  grep -qF -- "$frag" "$tmp/out" || err "train output lacks '$frag'"
done
"$bin" compare "$tmp/t.json" "$tmp/t.json" >"$tmp/cmp" 2>&1 || err "compare rc=$?"
grep -q "forward" "$tmp/cmp" && grep -q "+0.0%" "$tmp/cmp" || err "compare of a trace with itself"
"$bin" compare "$tmp/t.json" "$tmp/t.json" --json >"$tmp/cmp.json" || err "compare --json rc=$?"
python3 -c "import json,sys; d=json.load(open('$tmp/cmp.json')); assert d['step_time_s']['error']==0; assert 'backward_s' in d['phases']" \
  || err "compare json"

# Resume: 2 steps + checkpoint, then 2 more from it, equal 4 straight steps.
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 4 --json >"$tmp/a.json" || err "straight rc=$?"
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 2 --checkpoint "$tmp/ck" --json >"$tmp/b.json" || err "first half rc=$?"
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 2 --checkpoint "$tmp/ck" --resume --json >"$tmp/c.json" || err "resume rc=$?"
python3 - "$tmp" <<'PY' || err "resumed losses differ"
import json, sys
t = sys.argv[1]
a = [s["loss"] for s in json.load(open(t + "/a.json"))["steps"]]
b = [s["loss"] for s in json.load(open(t + "/b.json"))["steps"]]
c = [s["loss"] for s in json.load(open(t + "/c.json"))["steps"]]
assert a == b + c, (a, b, c)
PY
[ -f "$tmp/ck/latest" ] && [ -f "$tmp/ck/$(cat "$tmp/ck/latest")/manifest.json" ] || err "checkpoint layout"

# ZeRO-Infinity on NVMe (paths under /tmp).
# With the host device's profile: the sessions' swap lines and the CPU passes scaled to the run's own (6 steps after
# the first; under 5 samples, as at 4 steps below, a figure stays as measured).
"$bin" train --model tiny --hardware ci-2core --ds-config "$root/tests/data/engine/tiny-zero3-nvme.json" --steps 7 \
  --write-device-profile "$tmp/devn.json" >"$tmp/n" 2>&1 || { err "nvme train rc=$?"; cat "$tmp/n"; }
grep -q "nvme [1-9]" "$tmp/n" || err "nvme run shows no NVMe bytes"
grep -q -E "the sessions' swaps scaled to the run's: reads x[0-9.]+ \([0-9]+ swaps\), writes x[0-9.]+ \([0-9]+ swaps\)" \
  "$tmp/n" && grep -q -E "\(the passes scaled to the run's: Adam x[0-9.]+ \(6 ops\), the cast x[0-9.]+ \(6 ops\)\)" "$tmp/n" \
  || err "nvme device profile line: $(grep "^host device (after" "$tmp/n")"
grep -q "scaled to the run's own swaps that ran alone in the steps the trace's step is chosen from" "$tmp/devn.json" \
  || err "nvme device profile's source: $(grep -o 'NVMe swaps[^(]*' "$tmp/devn.json")"

# The host device's profile: written before training, then again after it with each module's time and the
# optimizer's CPU passes the median of the passes run after the steps, and the wake-ups the run's own; `simulate`
# reads it and `compare` holds it against the run's trace.
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 4 --write-device-profile "$tmp/dev.json" \
  --trace "$tmp/dt.json" >"$tmp/d" 2>&1 || { err "device profile rc=$?"; cat "$tmp/d"; }
grep -q "^host device (before training)" "$tmp/d" \
  && grep -q "^host device (after training, each module and the optimizer's CPU passes the median of the passes" "$tmp/d" \
  && grep -q -E "wake-ups: stream [0-9.]+ us, CPU pool [0-9.]+ us \(the trimmed mean of [0-9]+ hand-offs to a sleeping stream" "$tmp/d" \
  && grep -q -E "copies [0-9.]+ GB/s \(scaled to the run's: H2D as measured \(3 copies\), D2H as measured \(3 copies\)\)" "$tmp/d" \
  && grep -q "(the passes scaled to the run's: Adam as measured (3 ops), the cast as measured (3 ops))" "$tmp/d" \
  || err "device profile lines: $(grep "^host device" "$tmp/d")"
python3 - "$tmp/dev.json" <<'PY' || err "device profile contents"
import json, sys
h = json.load(open(sys.argv[1]))
assert "the median of 3 passes, one after each step from step 1 on" in h["source"], h["source"]
assert "the optimizer's CPU passes: the same passes; the swaps: the mean of 2 sessions" in h["source"], h["source"]
m = h["measured"]
assert 0 < m["stream_wake_latency_us"] < 1e5 and m["cpu_adam_params_per_s"] > 0, m
roles = set(h["measured"]["module_time_scale"])
assert {"qkv", "mlp_in", "norm", "head"} <= roles, roles
PY
"$bin" simulate --model tiny --hardware "$tmp/dev.json" --ds-config "$cfg" --raw-trace "$tmp/dp.json" >/dev/null \
  && "$bin" compare "$tmp/dp.json" "$tmp/dt.json" >"$tmp/dc" || err "simulate and compare with the device profile"
grep -q "^  forward " "$tmp/dc" || err "compare with the device profile: no forward row"
# Memory: `simulate` prices a PyTorch run's fixed bytes (CUDA context, Python process), the engine has none;
# compare sets them apart, and the tensors' peaks agree.
grep -q "^peak memory (tensors; the framework's fixed bytes apart)" "$tmp/dc" \
  && grep -q "^  framework's fixed bytes (CUDA context, allocator reserve, Python process): gpu 1.0 GiB predicted" "$tmp/dc" \
  || err "compare's memory rows: $(sed -n '/^peak memory/,/^$/p' "$tmp/dc")"
"$bin" compare "$tmp/dp.json" "$tmp/dt.json" --json >"$tmp/dcj" || err "compare --json rc=$?"
python3 - "$tmp/dcj" <<'PY' || err "compare --json memory"
import json, sys
m = json.load(open(sys.argv[1]))["peak_bytes"]
assert m["gpu"]["predicted_overhead"] >= 1 << 30 and m["gpu"]["measured_overhead"] == 0, m
assert m["cpu"]["predicted_overhead"] == 3 << 30 and m["cpu"]["measured_overhead"] == 0, m
for t in ("gpu", "cpu"):
    assert abs(m[t]["error"]) < 0.05, (t, m[t])
PY
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 1 --write-device-profile "$tmp/dev1.json" \
  >/dev/null 2>&1 || err "device profile of one step rc=$?"
grep -q "the pass after step 0" "$tmp/dev1.json" || err "one step's profile: not its own pass"
# Over 256 steps, a pass after every k-th step: at most 256 passes, spread over the run.
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 257 --seq-len 8 \
  --write-device-profile "$tmp/dev257.json" >/dev/null 2>&1 || err "device profile of 257 steps rc=$?"
grep -q "the median of 128 passes, one after every 2 steps from step 2 on" "$tmp/dev257.json" \
  || err "257 steps' profile: $(grep -o 'module times: [^;]*' "$tmp/dev257.json")"

# Refusals.
python3 -c "import json; h=json.load(open('$root/configs/hardware/ci-2core.json')); h['gpu']['memory_GiB']=0.001; json.dump(h, open('$tmp/hw.json','w'))"
"$bin" train --model tiny --hardware "$tmp/hw.json" --ds-config "$cfg" --steps 1 >"$tmp/r" 2>&1
rc=$?; [ $rc -eq 1 ] || err "does-not-fit rc=$rc (want 1)"
grep -q "DOES NOT FIT" "$tmp/r" && grep -q "nothing was allocated" "$tmp/r" || err "does-not-fit report"
# Without a GPU (CI), --device cuda stops before any work and says why.
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --device cuda --steps 1 >"$tmp/r" 2>&1
rc=$?; [ $rc -eq 2 ] || err "--device cuda rc=$rc (want 2)"
grep -q -E "device cuda: .*(no GPU|no CUDA|no usable GPU)" "$tmp/r" || err "--device cuda: no reason given: $(cat "$tmp/r")"
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 1 --resume >/dev/null 2>&1
rc=$?; [ $rc -eq 2 ] || err "--resume without --checkpoint rc=$rc (want 2)"
"$bin" train --model tiny --hardware ci-2core --ds-config "$cfg" --steps 1 --data /nonexistent/file >/dev/null 2>&1
rc=$?; [ $rc -eq 2 ] || err "missing --data rc=$rc (want 2)"
"$bin" compare /nonexistent/a.json "$tmp/t.json" >/dev/null 2>&1
rc=$?; [ $rc -eq 2 ] || err "compare missing file rc=$rc (want 2)"

[ $fail -eq 0 ] && echo "train_cli: ok"
exit $fail
