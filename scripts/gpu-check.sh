#!/usr/bin/env bash
# The GPU check, for one machine with an NVIDIA GPU (written for the lent H200 box: 16 cores, root, no network),
# within a budget (GPU_CHECK_BUDGET_S, default 500 s: under 8 minutes with the start):
#   1. binaries: from .gpu-bundle.tar.xz (scripts/gpu-bundle.sh, built on a machine with the dependencies) when it
#      is there, else a build here (needs SimGrid, libaio, ... installed: scripts/setup.sh);
#   2. the [.gpu] tests (kernels against their CPU references, the CUDA device, the engine on the GPU, NCCL) and the
#      GPU kernel benchmark;
#   3. `zerosim probe --gpu`: this machine's GEMM, HBM, PCIe and NVMe rates into a hardware profile;
#   4. two trainings with `zerosim train --device cuda`: gpt2-355m with ZeRO-Offload (optimizer on the CPU) and
#      gpt3-1.3b with ZeRO-Infinity (ZeRO-3, parameters and optimizer states on NVMe), each simulated with the
#      probed profile and compared (`zerosim compare`);
#   5. a summary: tokens/s, model TFLOPS, MFU, and the prediction's error per phase.
# Output to $OUT when set (the device tool returns it), else build-gpu/: gpu-check.log, summary.txt, the probed
# profile, each training's --json and each comparison's --json. Knobs: GPU_CHECK_BUDGET_S, GPU_CHECK_PROFILE (a
# profile probed before, instead of probing), GPU_CHECK_13B_STEPS (3), GPU_CHECK_ONLY_TESTS=1 (tests and benchmark), GPU_CHECK_ONLY_BENCH=1 (the benchmark).
#   bash scripts/gpu-check.sh            # from the repository root
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/build-gpu}"
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1

budget_s="${GPU_CHECK_BUDGET_S:-500}"
deadline=$((SECONDS + budget_s))
declare -a names=() states=() secs=()
step() {  # step NAME LIMIT_S CMD...: runs CMD with a time limit cut to the budget left; records the outcome
  local name="$1" limit="$2"
  shift 2
  local left=$((deadline - SECONDS))
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -le 0 ]; then
    names+=("$name"); secs+=("0"); states+=("SKIPPED (budget of ${budget_s}s spent)")
    return 124
  fi
  echo >&2
  echo "== $name (limit ${limit}s): $*" >&2
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@"
  local rc=$?
  names+=("$name"); secs+=("$((SECONDS - t0))")
  if [ $rc -eq 0 ]; then states+=("ok"); elif [ $rc -eq 124 ]; then states+=("TIMEOUT"); else states+=("FAIL rc=$rc"); fi
  return $rc
}

echo "gpu-check: $(date -u +%FT%TZ) on $(hostname), commit $(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null ||
  echo "nvidia-smi: not available"
echo "cpus $(nproc), memory $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), /tmp $(df -h /tmp | awk 'NR==2{print $4 " free of " $2}')"

# --- 1. binaries ---------------------------------------------------------------------------------------------------
bin=""
if [ -f "$root/.gpu-bundle.tar.xz" ]; then
  rm -rf /tmp/zs-gpu && mkdir -p /tmp/zs-gpu && tar -C /tmp/zs-gpu -xJf "$root/.gpu-bundle.tar.xz"
  bin=/tmp/zs-gpu/gpu-bundle/bin
  echo "bundle: $(head -1 /tmp/zs-gpu/gpu-bundle/BUNDLE)"
  # CUDA's libraries from the image: the toolkit's folders and the pip wheels' (nvidia/*/lib: NCCL lives there).
  libs=/tmp/zs-gpu/gpu-bundle/lib
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
    [ -d "$d" ] && libs="$libs:$d"
  done
  py_nv=$(python3 -c 'import nvidia, os; print(":".join(sorted(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p) if os.path.isdir(os.path.join(p, d, "lib")))))' 2>/dev/null)
  [ -n "$py_nv" ] && libs="$libs:$py_nv"
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if ! "$bin/zerosim" report >/dev/null 2>/tmp/zs-gpu/report.err; then
    echo "zerosim does not start with the image's libraries: $(head -3 /tmp/zs-gpu/report.err)"
    export LD_LIBRARY_PATH="/tmp/zs-gpu/gpu-bundle/lib/compat:$LD_LIBRARY_PATH"
  fi
  for f in zerosim test_exec_cuda test_probe_cuda bench_cuda_kernels; do
    missing=$(ldd "$bin/$f" | grep "not found")
    [ -n "$missing" ] && echo "$f: $missing"
  done
else
  bdir="$root/build-gpu"
  step "setup (apt, only what is missing)" 90 bash "$root/scripts/setup.sh" ||
    echo "setup failed: the build below says what is missing"
  step "configure (Release)" 60 cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DZEROSIM_WITH_QT=OFF -DZEROSIM_WITH_GUI=OFF &&
    step "build (-j$(nproc))" 240 cmake --build "$bdir" -j "$(nproc)" --target test_exec_cuda test_probe_cuda \
      bench_cuda_kernels zerosim zerosim-sim zerosim-cuda && bin="$bdir/bin"
fi
zs="$bin/zerosim"
[ -n "$bin" ] && "$zs" report

if [ -n "$bin" ] && [ -n "${GPU_CHECK_ONLY_BENCH:-}" ]; then
  step "bench_cuda_kernels --quick" 60 "$bin/bench_cuda_kernels" --quick
elif [ -n "$bin" ]; then
  # --- 2. tests and kernel benchmark -------------------------------------------------------------------------------
  step "test_exec_cuda (visible tests)" 30 "$bin/test_exec_cuda"
  # The engine's attention runs as GEMMs (attention_gemm.h); should they disagree with the reference here, the
  # trainings below fall back to the CUDA-core kernels and the summary says so.
  step "test_exec_cuda \"attention through GEMMs*\"" 30 "$bin/test_exec_cuda" "attention through GEMMs*" ||
    { export ZEROSIM_ATTENTION=flash; echo "attention: GEMM path failed its test; training with ZEROSIM_ATTENTION=flash"; }
  step "test_exec_cuda \"[.gpu]~[engine]~[nccl-timeout]\"" 90 "$bin/test_exec_cuda" "[.gpu]~[engine]~[nccl-timeout]" \
    --durations yes
  step "test_exec_cuda \"[.gpu][engine]\" (the engine on the GPU)" 100 "$bin/test_exec_cuda" "[.gpu][engine]" \
    --durations yes
  # A missing rank must turn into an error at the deadline (3 s): a hang here is itself the failure.
  step "test_exec_cuda \"[nccl-timeout]\"" 30 "$bin/test_exec_cuda" "[nccl-timeout]" --durations yes
  step "test_probe_cuda (the GPU probe, visible and [.gpu])" 30 "$bin/test_probe_cuda" "[cuda]" --durations yes
  step "bench_cuda_kernels --quick" 45 "$bin/bench_cuda_kernels" --quick
fi
# GPU_CHECK_ONLY_TESTS=1: the tests and the benchmark only (a short re-check after a fix).
if [ -n "$bin" ] && [ -z "${GPU_CHECK_ONLY_TESTS:-}" ] && [ -z "${GPU_CHECK_ONLY_BENCH:-}" ]; then

  # --- 3. probe ------------------------------------------------------------------------------------------------------
  nvme=/tmp/zs-nvme
  rm -rf "$nvme" && mkdir -p "$nvme"
  # GPU_CHECK_PROFILE: a profile probed before (bench/gpu-check/h200-probed.json) instead of a new probe.
  prof="$out/h200-probed.json"
  if [ -n "${GPU_CHECK_PROFILE:-}" ]; then
    cp "$GPU_CHECK_PROFILE" "$prof" && echo "profile: $GPU_CHECK_PROFILE (not probed again)"
  else
    step "zerosim probe --gpu" 75 "$zs" probe --gpu --base h200-box --nvme-path "$nvme" -o "$prof" ||
      cp "$root/configs/hardware/h200-box.json" "$prof"
  fi

  # --- 4. train, simulate, compare --------------------------------------------------------------------------------
  run() {  # run TAG MODEL CONFIG STEPS LIMIT
    local tag="$1" model="$2" cfg="$3" steps="$4" limit="$5"
    step "train $tag (--device cuda, $steps steps)" "$limit" "$zs" train --model "$model" --hardware "$prof" \
      --ds-config "$cfg" --device cuda --steps "$steps" --trace "/tmp/zs-gpu-meas-$tag.json" --json \
      >"$out/train-$tag.json" || { tail -5 "$out/train-$tag.json"; return 1; }
    step "simulate $tag" 30 "$zs" simulate --model "$model" --hardware "$prof" --ds-config "$cfg" --json \
      --raw-trace "/tmp/zs-gpu-pred-$tag.json" >"/tmp/zs-gpu-sim-$tag.json" &&
      step "compare $tag" 20 "$zs" compare "/tmp/zs-gpu-pred-$tag.json" "/tmp/zs-gpu-meas-$tag.json" --json \
        >"$out/compare-$tag.json"
    "$zs" compare "/tmp/zs-gpu-pred-$tag.json" "/tmp/zs-gpu-meas-$tag.json" 2>/dev/null | head -40
  }
  run 355m-offload gpt2-355m "$root/bench/gpu-check/zero2-offload-bf16.json" 6 100
  run 1.3b-infinity gpt3-1.3b "$root/bench/gpu-check/zero3-nvme-bf16.json" "${GPU_CHECK_13B_STEPS:-3}" 190
  rm -rf "$nvme"

  # --- 5. summary ----------------------------------------------------------------------------------------------------
  python3 - "$out" <<'PY' | tee "$out/summary.txt"
import json, os, sys
out = sys.argv[1]
print("%-16s %10s %12s %10s %7s | %10s %7s | %8s %8s %8s %8s" % ("run", "step ms", "tokens/s", "TFLOPS", "MFU",
      "pred ms", "p.MFU", "err step", "fwd", "bwd", "opt"))
for tag in ("355m-offload", "1.3b-infinity"):
    try:
        t = json.load(open(os.path.join(out, "train-%s.json" % tag)))["summary"]
    except Exception as e:
        print("%-16s train: no result (%s)" % (tag, e)); continue
    row = "%-16s %10.1f %12.0f %10.1f %6.1f%%" % (tag, 1e3 * t["steady_step_time_s"], t["steady_tokens_per_s"],
          t["model_tflops_per_gpu"], 100 * t["mfu"])
    try:
        s = json.load(open("/tmp/zs-gpu-sim-%s.json" % tag))
        c = json.load(open(os.path.join(out, "compare-%s.json" % tag)))
        p = c["phases"]
        e = lambda k: "%+7.1f%%" % (100 * p[k]["error"])
        row += " | %10.1f %6.1f%% | %+7.1f%% %s %s %s" % (1e3 * s["step_time_s"], 100 * s["mfu"],
               100 * c["step_time_s"]["error"], e("forward_s"), e("backward_s"), e("optimizer_s"))
    except Exception as ex:
        row += " | prediction: %s" % ex
    print(row)
print("measured: the median step after the first; error = (predicted - measured) / measured, phases by docs/SIM.md")
print("attention: %s" % ("CUDA-core kernels (ZEROSIM_ATTENTION=flash)" if os.environ.get("ZEROSIM_ATTENTION") == "flash"
                         else "batched GEMMs (attention_gemm.h)"))
for tag in ("355m-offload", "1.3b-infinity"):
    try:
        d = json.load(open(os.path.join(out, "train-%s.json" % tag)))
        print("%s losses: %s" % (tag, " ".join("%.3f" % s["loss"] for s in d["steps"])))
    except Exception:
        pass
PY
fi

echo
echo "== summary"
printf '%-58s %-8s %s\n' "step" "seconds" "result"
for i in "${!names[@]}"; do printf '%-58s %-8s %s\n' "${names[$i]}" "${secs[$i]}" "${states[$i]}"; done
fail=0
[ -z "$bin" ] && fail=1
for s in "${states[@]}"; do [ "$s" = ok ] || fail=1; done
echo "total ${SECONDS}s of a ${budget_s}s budget; exit $fail"
exit $fail
