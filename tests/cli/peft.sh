#!/usr/bin/env bash
# LoRA and QLoRA from the command line: --peft adapter_config.json on a shipped model and on a bitsandbytes-quantised
# HF config (fit --json's model.trainable_params and adapter), an adapter folder, a model id from a fake local HF
# cache, and the refusals with exit 2: another PEFT method, a regex target, a quantised base without --peft,
# DeepSeek-V3's fp8 config, and `train` on a model the engine cannot train.
set -u
bin="$1"; root="$2"
data="$root/tests/data/peft"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL $*"; fail=$((fail+1)); }
# run "what" want_rc args...: stdout in $tmp/out, stderr in $tmp/err
run() {
  local what="$1" want="$2"; shift 2
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  [ $rc -eq "$want" ] || { err "[$what] rc=$rc (want $want)"; cat "$tmp/out" "$tmp/err"; }
}
has() { grep -qF -- "$2" "$tmp/err" || { err "[$1] stderr lacks '$2'"; cat "$tmp/err"; }; }
json() { jq -r "$1" "$tmp/out" 2>/dev/null; }
want() {  # want "what" JQ EXPECTED
  local got; got=$(json "$2")
  [ "$got" = "$3" ] || err "[$1] $2 = '$got' (want '$3')"
}
a100=(--hardware dgx-a100-80gb -c zero3)
small=(--micro-batch 1 --seq-len 2048 --checkpoint-activations)  # so that QLoRA of Llama-3-8B fits (exit 0)

# Full fine-tune: every parameter trains.
run "full" 0 fit -m llama2-7b "${a100[@]}" --json
want "full" .model.trainable_params "$(json .model.params)"
full_params=$(json .model.params)

# LoRA r=16 on q,k,v,o of Llama-2-7B: 32 layers × 4 modules × (16·4096 + 4096·16) = 16,777,216 trainable
# (PEFT's print_trainable_parameters); "all params" counts the adapter too.
run "lora" 0 fit -m llama2-7b "${a100[@]}" --peft "$data/lora_llama_attn.json" --json
want "lora" .model.trainable_params 16777216
want "lora" .model.params $((full_params + 16777216))
want "lora" .model.adapter.kind lora
want "lora" .model.adapter.r 16

# The same adapter given as a folder holding adapter_config.json (save_pretrained's output, a Trainer checkpoint).
mkdir -p "$tmp/adapter" && cp "$data/lora_llama_attn.json" "$tmp/adapter/adapter_config.json"
run "adapter folder" 0 fit -m llama2-7b "${a100[@]}" --peft "$tmp/adapter" --json
want "adapter folder" .model.trainable_params 16777216

# QLoRA: Llama-3-8B's config.json with a bitsandbytes nf4 quantization_config, all-linear r=64 with DoRA.
run "qlora" 0 fit -m "$data/llama3_8b_bnb_nf4.json" "${a100[@]}" "${small[@]}" --peft "$data/qlora_all_linear.json" --json
want "qlora" .model.adapter.quantization.kind nf4
want "qlora" .model.adapter.quantization.double_quant true
want "qlora" .model.adapter.target_modules all-linear
qlora_trainable=$(json .model.trainable_params)
[ -n "$qlora_trainable" ] && [ "$qlora_trainable" -gt 0 ] && [ "$qlora_trainable" -lt "$(json .model.params)" ] ||
  err "[qlora] trainable_params '$qlora_trainable' not in (0, params)"

# A quantised base without --peft: refused, naming why.
run "qlora without peft" 2 fit -m "$data/llama3_8b_bnb_nf4.json" "${a100[@]}"
has "qlora without peft" "quantization_config: a bitsandbytes 4-bit base cannot be fully fine-tuned (its packed weights have no gradients); give the LoRA adapter with --peft adapter_config.json (QLoRA)"

# PEFT methods other than LoRA, and LoRA settings zerosim does not model.
run "ia3" 2 fit -m llama2-7b "${a100[@]}" --peft "$data/ia3.json"
has "ia3" 'ia3.json: peft_type: "IA3" is not modelled; zerosim models LoRA'
run "regex" 2 fit -m llama2-7b "${a100[@]}" --peft "$data/regex_target.json"
has "regex" "regex_target.json: target_modules:"
has "regex" "a regular-expression target is not supported; give the module names as a list"
run "layers" 2 fit -m llama2-7b "${a100[@]}" --peft "$data/layers_to_transform.json"
has "layers" "layers_to_transform.json: layers_to_transform: [0,1,2] is not modelled"
run "missing peft" 2 fit -m llama2-7b "${a100[@]}" --peft "$tmp/none.json"
has "missing peft" "none.json"

# DeepSeek-V3 ships quant_method "fp8": refused with the way to model bf16 training.
jq '.quantization_config = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
    "weight_block_size": [128, 128]}' "$data/llama3_8b_bnb_nf4.json" >"$tmp/fp8.json"
run "fp8" 2 fit -m "$tmp/fp8.json" "${a100[@]}"
has "fp8" 'fp8.json: quantization_config.quant_method: "fp8"'
has "fp8" '"dequantize": true'
jq '.quantization_config = {"quant_method": "gptq", "bits": 4}' "$data/llama3_8b_bnb_nf4.json" >"$tmp/gptq.json"
run "gptq" 2 fit -m "$tmp/gptq.json" "${a100[@]}"
has "gptq" 'quantization_config.quant_method: "gptq" is not modelled'

# A model id from the local HF cache (no network): HF_HOME's hub, the snapshot refs/main names.
snap="$tmp/hf/hub/models--meta-llama--Meta-Llama-3-8B/snapshots/0123abcd"
mkdir -p "$snap" "$tmp/hf/hub/models--meta-llama--Meta-Llama-3-8B/refs"
cp "$data/llama3_8b_bnb_nf4.json" "$snap/config.json"
echo 0123abcd >"$tmp/hf/hub/models--meta-llama--Meta-Llama-3-8B/refs/main"
HF_HUB_CACHE= HUGGINGFACE_HUB_CACHE= HF_HOME="$tmp/hf" run "hf cache" 0 \
  fit -m meta-llama/Meta-Llama-3-8B "${a100[@]}" "${small[@]}" --peft "$data/qlora_all_linear.json" --json
want "hf cache" .model.trainable_params "$qlora_trainable"
HF_HUB_CACHE= HUGGINGFACE_HUB_CACHE= HF_HOME="$tmp/hf" run "hf cache miss" 2 fit -m acme/absent "${a100[@]}"
has "hf cache miss" "$tmp/hf/hub/models--acme--absent/snapshots does not exist"

# train runs only what the engine can train: no LoRA, no MoE.
run "train lora" 2 train -m llama2-7b "${a100[@]}" --peft "$data/lora_llama_attn.json" --steps 1
has "train lora" "the engine trains full fine-tunes only"
run "train moe" 2 train -m qwen3-30b-a3b --hardware dgx-a100-80gb -c zero2 --steps 1
has "train moe" "is modelled by fit and simulate only"

[ $fail -eq 0 ] && echo "peft: all passed" || echo "peft: $fail failed"
[ $fail -eq 0 ]
