#!/usr/bin/env bash
# The MPI communicator's Catch2 tests (tests/mpi/test_mpi_communicator.cpp) under mpirun with 2 and 3 ranks
# (3 > cores: --oversubscribe): collectives in rank order for bf16/fp16/fp32, and a rank that skips a collective
# turning into a timeout error that names the op and the missing rank. Skips only when MPI is absent.
set -u
bin="$1"; root="$2"
testbin="$(dirname "$bin")/test_mpi"
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: mpirun not found"; exit 0; }
[ -x "$testbin" ] || { echo "SKIP: $testbin not built (CMake found no MPI)"; exit 0; }
# Under the sanitized run (scripts/test.sh sets ASAN_OPTIONS), LeakSanitizer must unwind Open MPI's allocations
# slowly: its libraries lack frame pointers, so fast unwinding yields "<unknown module>" frames that the suppressions
# in tests/lsan.supp cannot match. Only these MPI tests pay for it.
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
fail=0
for np in 2 3; do
  out=$(timeout 120 mpirun -np "$np" --oversubscribe "$testbin" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! echo "$out" | grep -q "All tests passed"; then
    echo "FAIL test_mpi with $np ranks rc=$rc"; echo "$out" | tail -40; fail=$((fail+1))
  fi
done
[ $fail -eq 0 ] && echo "mpi_comm: ok"
exit $fail
