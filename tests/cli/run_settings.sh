#!/usr/bin/env bash
# Run settings from the command line as the HF Trainer takes them (docs/DS_CONFIG.md "Run settings"): --bf16/--fp16
# on an "auto" config, --micro-batch overriding the file (train_batch_size recomputed, in --json's resolved config),
# --set in order with the reader's errors, a HuggingFace model folder as --model, exit 2 for a folder without
# config.json or a missing path, the sequence-length default in the header, and the bf16-without-bf16-GPU warning.
set -u
bin="$1"; root="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL $*"; fail=$((fail+1)); }
# run "what" want_rc args...: stdout+stderr in $tmp/out
run() {
  local what="$1" want="$2"; shift 2
  "$bin" "$@" >"$tmp/out" 2>&1; local rc=$?
  [ $rc -eq "$want" ] || { err "[$what] rc=$rc (want $want)"; cat "$tmp/out"; }
}
has() { grep -qF -- "$2" "$tmp/out" || { err "[$1] output lacks '$2'"; cat "$tmp/out"; }; }
lacks() { ! grep -qF -- "$2" "$tmp/out" || { err "[$1] output has '$2'"; cat "$tmp/out"; }; }
a100=(--hardware dgx-a100-80gb --gpus-per-node 4)

# --bf16 / --fp16 resolve fp16/bf16.enabled "auto" (transformers' HfTrainerDeepSpeedConfig.fill_match).
run "bf16 auto" 0 fit -m gpt2-124m "${a100[@]}" -c zero3-hf-auto --bf16
has "bf16 auto" "ZeRO-3, optimizer cpu, params cpu, bf16,"
has "bf16 auto" 'note: bf16.enabled: "auto" → true (HF --bf16)'
run "fp16 auto" 0 fit -m gpt2-124m "${a100[@]}" -c zero3-hf-auto --fp16
has "fp16 auto" "params cpu, fp16,"
run "no flag" 0 fit -m gpt2-124m "${a100[@]}" -c zero3-hf-auto
has "no flag" "params cpu, fp32,"
# fit says which DeepSpeed release it assumed (the newest modelled unless --deepspeed-version names one).
has "no flag" "; as DeepSpeed 0.19.6"
run "release" 0 fit -m gpt2-124m "${a100[@]}" -c zero3-hf-auto --deepspeed-version 0.19.2 --json
[ "$(jq -r .deepspeed_version "$tmp/out")" = "0.19.2" ] || err "[release] --json deepspeed_version"
run "bf16 and fp16" 2 fit -m gpt2-124m "${a100[@]}" -c zero3-hf-auto --bf16 --fp16
has "bf16 and fp16" "excludes"
# A file that enables the other precision: HF's mismatch error, exit 2 naming the file and key.
run "fp16 vs bf16 file" 2 fit -m gpt2-124m "${a100[@]}" -c zero3 --fp16
has "fp16 vs bf16 file" "zero3.json: bf16.enabled: true contradicts --fp16"

# --micro-batch overrides an explicit value; the explicit train_batch_size is dropped and recomputed.
printf '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1,
 "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}}' >"$tmp/tbs.json"
run "micro override" 0 fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --micro-batch 4
has "micro override" "micro batch 4, GA 1"
has "micro override" "note: --micro-batch 4 overrides train_micro_batch_size_per_gpu 16 from the file; train_batch_size recomputed (the file's 64 is dropped)"
"$bin" fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --micro-batch 4 --grad-accum 2 --json >"$tmp/j" 2>&1 ||
  err "micro override --json rc=$?"
python3 - "$tmp/j" <<'EOF' || err "resolved_config after --micro-batch 4 --grad-accum 2"
import json, sys
r = json.load(open(sys.argv[1]))["resolved_config"]
assert (r["train_micro_batch_size_per_gpu"], r["gradient_accumulation_steps"], r["train_batch_size"]) == (4, 2, 32), r
EOF

# --set: any key, in order; the reader's errors still name the file and JSON path; a malformed --set is exit 2.
run "set" 0 fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --set zero_optimization.stage=3 \
  --set zero_optimization.offload_param.device=nvme --set zero_optimization.offload_param.nvme_path=/local_nvme
has "set" "ZeRO-3, optimizer none, params nvme,"
has "set" "note: zero_optimization.stage = 3 (a ds_config change, e.g. --set; the file: 2)"
run "set later wins" 0 fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --micro-batch 4 --set train_micro_batch_size_per_gpu=2
has "set later wins" "micro batch 2,"
run "set unknown key" 2 fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --set zero_optimization.stagee=3
has "set unknown key" 'tbs.json: zero_optimization.stagee: unknown key; did you mean "stage"? (from --set zero_optimization.stagee=3)'
run "set malformed" 2 fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --set zero_optimization
has "set malformed" '--set "zero_optimization": expected KEY.PATH=VALUE'
run "set through a value" 2 fit -m gpt2-124m "${a100[@]}" -c "$tmp/tbs.json" --set zero_optimization.stage.x=1
has "set through a value" "zero_optimization.stage is 2, not an object"

# --model takes a HuggingFace model folder (its config.json); a folder without one, or a missing path, is exit 2.
mkdir -p "$tmp/Qwen2-0.5B" "$tmp/empty"
cp "$root/tests/data/hf/Qwen2-0.5B.json" "$tmp/Qwen2-0.5B/config.json"
run "hf folder" 0 fit -m "$tmp/Qwen2-0.5B" "${a100[@]}" -c zero3-offload-cpu --micro-batch 1
has "hf folder" "Qwen2-0.5B (0.49B params)"
# The default sequence length: min(max_position_embeddings 131072, 4096), said in the header.
has "hf folder" "seq 4096 (default: min(max_position_embeddings 131072, 4096); --seq-len sets it)"
run "hf folder seq given" 0 fit -m "$tmp/Qwen2-0.5B" "${a100[@]}" -c zero3-offload-cpu --micro-batch 1 --seq-len 2048
has "hf folder seq given" "bf16, seq 2048, micro batch 1"
lacks "hf folder seq given" "default: min"
run "folder without config.json" 2 fit -m "$tmp/empty" "${a100[@]}" -c zero3
has "folder without config.json" "$tmp/empty: is a directory without config.json; expected"
run "missing model path" 2 fit -m "$tmp/nope/model" "${a100[@]}" -c zero3
has "missing model path" "$tmp/nope/model: no such file; expected"
run "directory as ds_config" 2 fit -m gpt2-124m "${a100[@]}" -c "$tmp/empty"
has "directory as ds_config" "is a directory; expected a shipped config name or a DeepSpeed ds_config JSON"

# Models within the cap keep their length, and the header says where it came from; plan and simulate say it too.
run "seq default gpt2" 0 fit -m gpt2-124m "${a100[@]}" -c zero3
has "seq default gpt2" "seq 1024 (default: min(max_seq_len 1024, 4096); --seq-len sets it)"
run "plan header" 0 plan -m gpt2-124m "${a100[@]}" -c zero3 --summary
has "plan header" "seq 1024 (default: min(max_seq_len 1024, 4096); --seq-len sets it)"

# bf16 on a GPU without bf16 (V100): fit still answers (exit 0), with a warning under the header.
run "bf16 on V100" 0 fit -m gpt2-124m --hardware v100-32gb-workstation -c zero3-hf-auto --bf16
has "bf16 on V100" "warning: bf16 on Tesla V100-PCIE-32GB, which has no bf16 support"
has "bf16 on V100" "Your setup doesn't support bf16/gpu"
"$bin" fit -m gpt2-124m --hardware v100-32gb-workstation -c zero3-hf-auto --bf16 --json >"$tmp/j" 2>&1
python3 -c "import json,sys; w=json.load(open(sys.argv[1]))['warnings']; assert 'V100' in w[0], w" "$tmp/j" ||
  err "fit --json lacks the bf16 warning"
run "fp16 on V100" 0 fit -m gpt2-124m --hardware v100-32gb-workstation -c zero3-hf-auto --fp16
lacks "fp16 on V100" "warning:"

echo "run_settings: $fail failures"
[ $fail -eq 0 ]
