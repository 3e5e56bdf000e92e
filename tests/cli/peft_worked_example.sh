#!/usr/bin/env bash
# docs/MEMORY.md "LoRA and QLoRA": fit --json gives every byte of the worked example's table, for LoRA and QLoRA on
# Llama-2-7B and Llama-3-8B (ZeRO-2, one GPU, seq 2048, activation checkpointing). A change to the memory model
# that moves one of them must update the doc with it.
set -u
bin="$1"; root="$2"
fail=0
# model peft hardware micro_batch | T all_params lp_params quant_constants lp_grads fp32_master adam_m_v comm_buckets
#   reduce_temporaries activations gpu_total
check() {
  local model=$1 peft=$2 hw=$3 mb=$4; shift 4
  local out
  out=$("$bin" fit --model "$model" --peft "$root/configs/peft/$peft.json" --hardware "$hw" --gpus-per-node 1 \
        --ds-config zero2 --seq-len 2048 --micro-batch "$mb" --checkpoint-activations --json 2>/dev/null)
  local got
  got=$(echo "$out" | jq -r '[.model.trainable_params, .model.params,
          (.tiers.gpu.breakdown | .lp_params, (.quant_constants // 0), .lp_grads, .fp32_master, .adam_m_v,
           .comm_buckets, .reduce_temporaries, .activations), .tiers.gpu.required_bytes] | map(tostring) | join(" ")')
  if [ "$got" != "$*" ]; then
    echo "FAIL $model + $peft:"; echo "  doc: $*"; echo "  fit: $got"; fail=$((fail+1))
  fi
}
check llama2-7b lora-r16-all-linear dgx-a100-80gb 4 39976960 6778392576 13556785152 0 79953920 159907840 \
  319815680 2000000000 79953920 4903141376 23396180838
check llama2-7b-bnb-4bit qlora-r64-all-linear rtx4090-workstation 1 159907840 6898323456 4082638848 102768640 \
  319815680 639631360 1279262720 2000000000 319815680 1225785344 12213558937
check llama3-8b lora-r16-all-linear dgx-a100-80gb 4 41943040 8072204288 16144408576 0 83886080 167772160 \
  335544320 2000000000 83886080 12788432896 34434029209
check llama3-8b-bnb-4bit qlora-r64-all-linear rtx4090-workstation 1 167772160 8198033408 5927084032 110755840 \
  335544320 671088640 1342177280 2000000000 335544320 3197108224 16393652684
[ $fail -eq 0 ] && echo "peft worked example: 4 runs, every byte as docs/MEMORY.md gives it"
exit $fail
