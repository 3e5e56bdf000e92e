#!/usr/bin/env bash
# The house rules issue 30 set, checked on the source tree:
#  - DeepSpeed's placement is computed in core/layout.cpp only: exec/ holds no partition arithmetic (ceil(n / world),
#    a rank's flat slice, a parameter index from a tensor index) and reads the Plan's layout instead;
#  - exec/ never includes the cost model (measurement lives in probe/);
#  - no function in core, sim, exec, probe or cli is longer than 150 lines.
set -u
root="$2"
cd "$root"
fail=0
err() { echo "FAIL: $*"; fail=1; }

partition=$(grep -nE '\+ *world *- *1\) */ *world|rank *\* *flat_part|q *\* *S\b|% *np\b|% *params\.size\(\)|2 *\* *np *\+' \
  exec/*.cpp exec/*.h exec/cuda/*.cpp 2>/dev/null | grep -v '^\s*//' || true)
[ -z "$partition" ] || err "partition arithmetic in exec/ (core/layout.h has it):"$'\n'"$partition"
costs=$(grep -rln 'core/cost_model.h' exec/ || true)
[ -z "$costs" ] || err "exec/ includes the cost model: $costs"
long=$(bash scripts/function_lengths.sh --limit 150 core/*.cpp sim/*.cpp exec/*.cpp exec/cuda/*.cpp probe/*.cpp \
  probe/cuda/*.cpp cli/*.cpp)
[ -z "$long" ] || err "functions over 150 lines:"$'\n'"$long"
[ $fail -eq 0 ] && echo "ok: placement in core/layout only, exec/ free of the cost model, no function over 150 lines"
exit $fail
