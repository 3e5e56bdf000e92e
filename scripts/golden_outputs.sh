#!/usr/bin/env bash
# The outputs a refactor must not change: `fit --json`, `plan --json -` and `simulate --json` on every shipped
# model x hardware x DeepSpeed config, one sha256 per output. The plan's `layout` section is left out of its hash
# (it is the plan's own record of the layout, added after the hashes were first recorded), and so are simulate's
# `simulation.wall_s` and `simulation.peak_rss_bytes` (how long and how much memory the simulator took on this
# machine). Every other value counts, and the exit code is part of each line. JSON is compared as jq -c prints it,
# and the shipped inputs' absolute paths (which name the checkout) as <root>/models/..., <root>/configs/...
#   scripts/golden_outputs.sh [ZEROSIM]            print the lines (sorted) to stdout
#   scripts/golden_outputs.sh --record [ZEROSIM]   write them to tests/data/golden/outputs.sha256
#   scripts/golden_outputs.sh --check [ZEROSIM]    fail, naming each case, when a line differs from the record
# ZEROSIM defaults to build/bin/zerosim. Runs the cases on every core (xargs -P).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode=print
case "${1:-}" in --record|--check) mode="${1#--}"; shift ;; esac
zerosim="${1:-$root/build/bin/zerosim}"
[ -x "$zerosim" ] || { echo "golden_outputs: no zerosim at $zerosim (build first)" >&2; exit 2; }
record="$root/tests/data/golden/outputs.sha256"
cd "$root"

# One case: "<command> <model> <hardware> <config>" -> "<sha256> <rc> <command> <model> <hardware> <config>".
one_case() {
  local zerosim="$1" command="$2" model="$3" hardware="$4" config="$5" rc=0 out
  out=$(mktemp)
  case "$command" in
    fit) "$zerosim" fit -m "$model" --hardware "$hardware" -c "$config" --json >"$out" 2>&1 || rc=$? ;;
    simulate) "$zerosim" simulate -m "$model" --hardware "$hardware" -c "$config" --json >"$out.raw" 2>&1 || rc=$?
          # The simulator's own wall time and peak RSS are measurements of this machine, not predictions.
          jq -c 'del(.simulation.wall_s, .simulation.peak_rss_bytes)' "$out.raw" >"$out" 2>/dev/null || cp "$out.raw" "$out"
          rm -f "$out.raw" ;;
    plan) "$zerosim" plan -m "$model" --hardware "$hardware" -c "$config" --json - >"$out.raw" 2>&1 || rc=$?
          # A plan that is not JSON (an error message) is hashed as it is.
          jq -c 'del(.layout)' "$out.raw" >"$out" 2>/dev/null || cp "$out.raw" "$out"
          rm -f "$out.raw" ;;
  esac
  echo "$(sed -E 's#/[^" ]*/(models|configs)/#<root>/\1/#g' "$out" | sha256sum | cut -c1-64) $rc $command $model $hardware $config"
  rm -f "$out"
}
export -f one_case

cases() {
  local m h c command
  for m in models/*.json; do
    for h in configs/hardware/*.json; do
      for c in configs/deepspeed/*.json; do
        for command in fit plan simulate; do
          echo "$command $(basename "$m" .json) $(basename "$h" .json) $(basename "$c" .json)"
        done
      done
    done
  done
}

lines=$(cases | xargs -P "$(nproc)" -L1 bash -c 'one_case "$0" "$@"' "$zerosim" | sort -k3)
case "$mode" in
  print) echo "$lines" ;;
  record)
    { echo "# scripts/golden_outputs.sh --record with ${ZEROSIM_BUILT_FROM:-the binary built from $(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
      echo "$lines"; } >"$record.tmp"
    mv "$record.tmp" "$record"
    echo "golden_outputs: recorded $(echo "$lines" | wc -l) outputs in ${record#$root/}" ;;
  check)
    [ -f "$record" ] || { echo "golden_outputs: no record at $record" >&2; exit 3; }
    expected=$(grep -v '^#' "$record" | sort -k3)
    if [ "$expected" = "$lines" ]; then
      echo "golden_outputs: $(echo "$lines" | wc -l) outputs identical to the record ($(head -1 "$record" | awk '{print $NF}'))"
    else
      echo "golden_outputs: outputs differ from the record (< recorded, > now):"
      diff <(echo "$expected") <(echo "$lines") || true
      exit 1
    fi ;;
esac
