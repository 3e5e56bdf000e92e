#!/usr/bin/env bash
# `fit --apply-fix N --write-config FILE` round trip: for every fix of several configs that do not fit, the written
# ds_config run through `fit` again (with the run flags the fix names) gives exactly the numbers the fix promised
# in `fit --json` (required bytes per tier, fits, verdict). The written file keeps the original's key order and
# "auto" values. Bad uses are exit 2 and write nothing.
set -u
bin="$1"; root="$2"
command -v jq >/dev/null || { echo "apply_fix: jq is not installed (scripts/setup.sh installs it)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0; checked=0
err() { echo "FAIL $*"; fail=$((fail+1)); }

# A config as HF users write them: "auto" values, keys in no particular order, 5e8 as a float, an explicit
# train_batch_size, the deprecated cpu_offload flag (a fix that offloads the optimizer must remove it).
cat >"$tmp/hf.json" <<'EOF'
{
  "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8, "overlap_comm": true, "cpu_offload": false},
  "train_batch_size": 64,
  "train_micro_batch_size_per_gpu": 8,
  "bf16": {"enabled": "auto"},
  "gradient_clipping": "auto",
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}}
}
EOF

# Each case: "<model> <hardware> <ds_config> [base flags...]".
cases=(
  "$root/models/llama2-70b.json $root/configs/hardware/v100-32gb-workstation.json $root/configs/deepspeed/zero2.json --micro-batch 2"
  "$root/models/llama2-70b.json $root/configs/hardware/rtx4090-workstation.json $root/configs/deepspeed/zero3.json"
  "$root/models/llama2-70b.json $root/configs/hardware/rtx4090-workstation.json $root/configs/deepspeed/zero3-offload-nvme.json"
  "$root/models/llama2-13b.json $root/configs/hardware/dgx-a100-80gb.json $root/configs/deepspeed/zero3.json"
  "$root/models/llama2-7b.json $root/configs/hardware/rtx4090-workstation.json $root/configs/deepspeed/zero3-hf-auto.json"
  "$root/models/gpt2-10b.json $root/configs/hardware/dgx2.json $root/configs/deepspeed/zero2-offload-cpu.json"
  "$root/models/llama2-7b.json $root/configs/hardware/dgx-a100-80gb.json $tmp/hf.json --gpus-per-node 2 --bf16 --set zero_optimization.allgather_bucket_size=200000000"
  "$root/models/llama2-7b.json $root/configs/hardware/dgx-a100-80gb.json $root/configs/deepspeed/zero3.json --seq-len 6144"
)

# The base flags without those a fix replaces (--nodes 2 replaces --nodes 1) and without --set (the written file
# holds those changes), then the fix's flags.
refit_flags() {  # $1: the fix's run_flags; rest: base flags
  local fix="$1"; shift
  local out=() skip=0 f
  for f in "$@"; do
    if [ $skip -eq 1 ]; then skip=0; continue; fi
    if [ "$f" = --set ]; then skip=1; continue; fi
    if [[ "$f" == --* && " $fix " == *" $f "* ]]; then
      [[ "$f" == --checkpoint-activations || "$f" == --bf16 || "$f" == --fp16 ]] || skip=1  # a flag with a value
      continue
    fi
    out+=("$f")
  done
  echo "${out[@]}" $fix
}

for c in "${cases[@]}"; do
  read -r -a a <<<"$c"
  m="${a[0]}"; h="${a[1]}"; cfg="${a[2]}"; base=("${a[@]:3}")
  what="$(basename "$m" .json) on $(basename "$h" .json) with $(basename "$cfg")${base[*]:+ ${base[*]}}"
  "$bin" fit -m "$m" --hardware "$h" -c "$cfg" "${base[@]}" --json >"$tmp/base.json"
  rc=$?
  if [ $rc -eq 0 ]; then echo "skip: $what fits"; continue; fi  # the memory model moved; the count below guards
  [ $rc -eq 1 ] || { err "$what: fit rc=$rc, expected 1 (does not fit)"; continue; }
  [ "$(jq -r .verdict "$tmp/base.json")" = does_not_fit ] || err "$what: verdict is not does_not_fit"
  n=$(jq '.suggestions | length' "$tmp/base.json")
  [ "$n" -gt 0 ] || { err "$what: no fixes"; continue; }
  # Hardware facts are limits, not fixes.
  jq -e '[.suggestions[].text | select(test("^needs "))] | length == 0' "$tmp/base.json" >/dev/null ||
    err "$what: a hardware fact in the fix list"
  jq -e '.limits | length > 0' "$tmp/base.json" >/dev/null || err "$what: no limits listed"
  for i in $(seq 1 "$n"); do
    fix=$(jq -c ".suggestions[$((i-1))]" "$tmp/base.json")
    rm -f "$tmp/out.json"
    "$bin" fit -m "$m" --hardware "$h" -c "$cfg" "${base[@]}" --apply-fix "$i" --write-config "$tmp/out.json" \
      >"$tmp/apply.txt" 2>&1
    rc=$?; [ $rc -eq 0 ] || { err "$what: --apply-fix $i rc=$rc"; cat "$tmp/apply.txt"; continue; }
    grep -qF "wrote $tmp/out.json" "$tmp/apply.txt" || err "$what: fix $i: the path is not printed"
    flags=$(jq -r .run_flags <<<"$fix")
    case " ${base[*]} " in *" --set "*) grep -qF -- "leave those --set flags out" "$tmp/apply.txt" ||
      err "$what: fix $i: no word on the --set changes the file holds" ;; esac
    if [ -n "$flags" ]; then
      grep -qF -- "also pass $flags" "$tmp/apply.txt" || err "$what: fix $i: 'also pass $flags' not printed"
    fi
    # The original's keys in their order, its "auto" values where the fix did not change them.
    orig_keys=$(jq -c '[keys_unsorted[]]' "$cfg")
    kept_keys=$(jq -c --argjson o "$orig_keys" '[keys_unsorted[] | select(. as $k | $o | index($k))]' "$tmp/out.json")
    [ "$orig_keys" = "$kept_keys" ] || err "$what: fix $i: top-level keys reordered or lost: $orig_keys → $kept_keys"
    changed=$(jq -c '[.changes[].path | split(".")]' <<<"$fix")
    lost_auto=$(jq -c --argjson ch "$changed" --slurpfile out "$tmp/out.json" \
      '[paths(. == "auto") | select(. as $p | $ch | index([$p]) | not) | select(. as $p | $out[0] | getpath($p) != "auto")]' \
      "$cfg")
    [ "$lost_auto" = "[]" ] || err "$what: fix $i: \"auto\" values lost: $lost_auto"
    # The run's --set changes are in the written file (unless the fix sets the same key).
    for ((k = 0; k < ${#base[@]}; k++)); do
      [ "${base[$k]}" = --set ] || continue
      kv="${base[$((k+1))]}"; key="${kv%%=*}"; val="${kv#*=}"
      jq -e --arg k "$key" '[.changes[].path] | index($k)' <<<"$fix" >/dev/null && continue
      jq -e --arg k "$key" --argjson v "$val" 'getpath($k | split(".")) == $v' "$tmp/out.json" >/dev/null ||
        err "$what: fix $i: --set $kv is not in the written file"
    done
    # fit again: the written file with the fix's run flags.
    read -r -a refit <<<"$(refit_flags "$flags" "${base[@]}")"
    "$bin" fit -m "$m" --hardware "$h" -c "$tmp/out.json" "${refit[@]}" --json >"$tmp/again.json" 2>"$tmp/again.err"
    rc=$?
    promised_fits=$(jq -r .fits <<<"$fix")
    want_rc=1; [ "$promised_fits" = true ] && want_rc=0
    [ $rc -eq $want_rc ] || { err "$what: fix $i: refit rc=$rc, promised fits=$promised_fits"; cat "$tmp/again.err"; }
    got=$(jq -c '{fits, verdict, required_bytes: (.tiers | map_values(.required_bytes))}' "$tmp/again.json")
    want=$(jq -c '{fits, verdict, required_bytes}' <<<"$fix")
    if [ "$got" != "$want" ]; then
      err "$what: fix $i ($(jq -r .text <<<"$fix")): promised $want, fit of the written file gives $got" \
          "(flags: ${refit[*]})"
    fi
    checked=$((checked+1))
  done
done

# Bad uses: exit 2, a message, nothing written.
m="$root/models/llama2-70b.json"; h="$root/configs/hardware/v100-32gb-workstation.json"; cfg="$root/configs/deepspeed/zero2.json"
n=$("$bin" fit -m "$m" --hardware "$h" -c "$cfg" --json | jq '.suggestions | length')
for bad in "--apply-fix 1" "--write-config $tmp/bad.json" "--apply-fix 0 --write-config $tmp/bad.json" \
           "--apply-fix $((n+1)) --write-config $tmp/bad.json"; do
  # shellcheck disable=SC2086
  "$bin" fit -m "$m" --hardware "$h" -c "$cfg" $bad >/dev/null 2>"$tmp/bad.err"
  rc=$?; [ $rc -eq 2 ] || err "fit $bad: rc=$rc, expected 2"
  [ -s "$tmp/bad.err" ] || err "fit $bad: no message"
  [ ! -e "$tmp/bad.json" ] || { err "fit $bad: wrote a file"; rm -f "$tmp/bad.json"; }
done
grep -q "numbered 1 to $n" "$tmp/bad.err" || err "out-of-range N: the message does not give the range"
"$bin" fit -m "$root/models/gpt2-124m.json" --hardware "$root/configs/hardware/dgx-a100-80gb.json" \
  -c "$root/configs/deepspeed/zero2.json" --apply-fix 1 --write-config "$tmp/bad.json" >/dev/null 2>"$tmp/bad.err"
rc=$?; [ $rc -eq 2 ] || err "a config that fits: --apply-fix 1 rc=$rc, expected 2"
grep -q "no fixes" "$tmp/bad.err" || err "a config that fits: no 'no fixes' message"
[ ! -e "$tmp/bad.json" ] || err "a config that fits: --apply-fix wrote a file"
"$bin" fit -m "$m" --hardware "$h" -c "$cfg" --apply-fix 1 --write-config "$tmp/no/such/dir/out.json" >/dev/null 2>&1
rc=$?; [ $rc -eq 3 ] || err "an unwritable path: rc=$rc, expected 3"

[ $checked -ge 20 ] || err "only $checked fixes checked"
[ $fail -eq 0 ] && echo "apply_fix: $checked fixes round-tripped" || { echo "apply_fix: $fail failures"; exit 1; }
