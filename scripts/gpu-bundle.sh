#!/usr/bin/env bash
# Builds, here, what scripts/gpu-check.sh runs on the GPU machine, which reaches no package registry and has CUDA
# but not SimGrid, libaio, OpenMPI or the headers zerosim builds with. Release build with CUDA (sm_80, sm_90), the
# binaries stripped, and the shared libraries they load that the GPU image does not provide (everything but glibc,
# libstdc++/libgcc and CUDA's own cudart/cuBLASLt/NCCL, which gpu-check.sh finds there; a libstdc++ rides along in
# lib/compat/ in case the image's is older), packed into .gpu-bundle.tar.xz (ignored by git).
#   bash scripts/gpu-bundle.sh                    # ~8 min on 2 cores from scratch
#   device run, carry [".gpu-bundle.tar.xz"]:     bash scripts/gpu-check.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="$root/build-gpu-bundle"
jobs="$(nproc 2>/dev/null || echo 2)"
cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZEROSIM_WITH_GUI=OFF -DZEROSIM_WITH_QT=OFF \
  -DZEROSIM_WITH_BENCH=ON >/dev/null
cmake --build "$b" -j "$jobs" --target zerosim zerosim-sim zerosim-cuda test_exec_cuda test_probe_cuda \
  bench_cuda_kernels
[ -x "$b/bin/test_exec_cuda" ] || { echo "gpu-bundle: no CUDA in this build (nvcc not found?)" >&2; exit 2; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
d="$stage/gpu-bundle"
mkdir -p "$d/bin" "$d/lib/compat"
for f in zerosim zerosim-sim.so zerosim-cuda.so test_exec_cuda test_probe_cuda bench_cuda_kernels; do
  cp "$b/bin/$f" "$d/bin/"
  strip --strip-unneeded "$d/bin/$f"
done
# What the binaries load, minus what the GPU image has (glibc, the compiler runtime, the CUDA driver and libraries).
ldd "$d"/bin/* 2>/dev/null | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$d/lib/"; done
cp -L "$(ldd "$d/bin/zerosim" | awk '/libstdc\+\+/{print $3}')" "$d/lib/compat/"
cp -L "$(ldd "$d/bin/zerosim" | awk '/libgcc_s/{print $3}')" "$d/lib/compat/"
{
  echo "commit $(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null)$(git -C "$root" diff --quiet 2>/dev/null || echo -dirty)"
  echo "built $(date -u +%FT%TZ) on $(hostname) with $(/usr/local/cuda/bin/nvcc --version | tail -1)"
} >"$d/BUNDLE"
tar -C "$stage" -cJf "$root/.gpu-bundle.tar.xz" gpu-bundle
echo "gpu-bundle: $(du -h "$root/.gpu-bundle.tar.xz" | cut -f1) in $root/.gpu-bundle.tar.xz ($(cat "$d/BUNDLE" | head -1))"
