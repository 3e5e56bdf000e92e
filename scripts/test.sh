#!/usr/bin/env bash
# Everything CI runs: set up, build, run the whole suite; then once more under ASan + UBSan.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 QT_QPA_PLATFORM=offscreen
jobs="$(nproc 2>/dev/null || echo 2)"

echo "== plain build =="
bash "$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$jobs")

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build =="
# The GUI's Qt tests run in the plain build only (Qt's own libraries are not instrumented; CI time).
bash "$root/scripts/build.sh" "$root/build-asan" -DZEROSIM_SANITIZE=ON -DZEROSIM_WITH_BENCH=OFF -DZEROSIM_WITH_CUDA=OFF \
  -DZEROSIM_WITH_GUI=OFF
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
# The golden-outputs test (2,184 CLI runs, no code of its own) runs in the plain build only: CI time.
(cd "$root/build-asan" && ctest --output-on-failure -j "$jobs" -E '^cli\.golden_outputs$')
