#!/usr/bin/env bash
# Bad input: one clear message on stderr naming the file (and JSON path), exit code 2, never a crash.
set -u
bin="$1"; root="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect2() {  # expect2 "what" "fragment" args...
  local what="$1" frag="$2"; shift 2
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL [$what] rc=$rc (want 2)"; cat "$tmp/err"; fail=$((fail+1)); return; fi
  if ! grep -qF -- "$frag" "$tmp/err"; then echo "FAIL [$what] stderr lacks '$frag':"; cat "$tmp/err"; fail=$((fail+1)); return; fi
  [ "$(wc -l <"$tmp/err")" -le 3 ] || { echo "FAIL [$what] more than 3 lines on stderr"; fail=$((fail+1)); }
}
printf '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,\n "offload_optimizer": {"device": "nvmee"}}}' >"$tmp/bad_device.json"
printf '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "overlap_com": true}}' >"$tmp/unknown.json"
printf '{"train_micro_batch_size_per_gpu": 1,\n  "zero_optimization": {"stage": 2,,}}' >"$tmp/malformed.json"
printf '{"train_batch_size": 10, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1}' >"$tmp/batch.json"
printf '{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},\n "zenflow": {"topk_ratio": 0.1}}}' >"$tmp/zenflow.json"
printf '{"train_micro_batch_size_per_gpu": "two"}' >"$tmp/type.json"
printf '{"model_type": "bert", "hidden_size": 768}' >"$tmp/config.json"

common=(--model gpt2-124m --hardware dgx-a100-80gb)
expect2 "unknown offload device" 'zero_optimization.offload_optimizer.device' fit "${common[@]}" --ds-config "$tmp/bad_device.json"
expect2 "unknown key" 'did you mean "overlap_comm"' fit "${common[@]}" --ds-config "$tmp/unknown.json"
expect2 "malformed JSON" 'malformed.json:2:' fit "${common[@]}" --ds-config "$tmp/malformed.json"
expect2 "inconsistent batch" 'train_batch_size' fit "${common[@]}" --ds-config "$tmp/batch.json"
expect2 "feature not modelled" 'zerosim does not model ZenFlow' fit "${common[@]}" --ds-config "$tmp/zenflow.json"
expect2 "wrong type" 'train_micro_batch_size_per_gpu' fit "${common[@]}" --ds-config "$tmp/type.json"
expect2 "missing file" '/no/such/ds.json' fit "${common[@]}" --ds-config /no/such/ds.json
expect2 "unknown shipped name" 'shipped:' fit --model gpt5 --hardware dgx2 --ds-config zero2
expect2 "unsupported HF model_type" 'bert' fit --model "$tmp/config.json" --hardware dgx2 --ds-config zero2
expect2 "too many GPUs" 'GPUs per node' fit --model gpt2-124m --hardware v100-32gb-workstation --gpus-per-node 4 --ds-config zero2
expect2 "seq beyond learned positions" 'max_seq_len' fit --model gpt2-124m --hardware dgx2 --seq-len 4096 --ds-config zero2
expect2 "missing required flag" 'ds-config' fit --model gpt2-124m
expect2 "estimate without params" '--params' estimate --stage 3
expect2 "estimate bad stage" 'stage' estimate --stage 4 --params 1e9
echo "bad_input: $fail failures"
[ $fail -eq 0 ]
