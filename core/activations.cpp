// Activation memory of one micro-batch (declared in memory.h): what each block saves for backward, by layer type,
// dtype, attention implementation and checkpointing (Korthikanti et al. 2022, with HF's dropout-free LLaMA family).
#include <algorithm>

#include "core/memory.h"

namespace zs::core {

bool stores_attention_scores(const MemoryOptions& o, const Strategy& s) {
  return !o.flash_attention || s.run.launch.attn_implementation == AttnImplementation::eager;
}

ActivationBytes activation_bytes(const ModelSpec& m, const Strategy& s, const MemoryOptions& o) {
  ActivationBytes a;
  const int64_t sb = s.run.seq_len * s.micro_batch_per_gpu;
  const int64_t e = bytes_per_element(s.model_dtype());  // activations are stored in the model dtype
  const int64_t h = m.hidden, f = m.ffn_hidden;
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  const bool dropout = m.arch == Arch::gpt;  // GPT-2 has dropout 0.1; LLaMA-family configs have none
  const int64_t mask = dropout ? 1 : 0;      // a dropout mask is one byte per element
  int64_t layer = 0;
  layer += 2 * e * sb * h;                    // two norm inputs
  layer += e * sb * h;                        // QKV projection input
  layer += e * sb * (q + 2 * kv);             // Q, K, V
  layer += e * sb * q;                        // attention output = out-projection input
  layer += mask * sb * h;                     // attention-output dropout mask
  if (!stores_attention_scores(o, s)) {
    layer += 4 * m.heads * sb;                // fp32 log-sum-exp per row
  } else {
    // softmax output, its dropout mask, dropout output: [b, a, s, s]
    layer += (e + mask + (dropout ? e : 0)) * m.heads * sb * s.run.seq_len;
  }
  if (m.activation == Activation::swiglu) {
    layer += e * sb * h + 4 * e * sb * f;     // MLP input, gate, up, silu(gate), product
  } else {
    layer += e * sb * h + 2 * e * sb * f;     // MLP input, fc output (gelu input), gelu output
  }
  layer += mask * sb * h;                     // MLP dropout mask
  a.per_layer_full = layer;
  a.per_layer_checkpoint = e * sb * h;
  a.embedding = mask * sb * h;
  // final norm input, head input, lp logits, fp32 logits for the loss, fp32 logit gradient
  a.head_and_loss = 2 * e * sb * h + (e + 4 + 4) * sb * m.vocab;

  const auto& ac = s.activation_checkpointing;
  if (ac.enabled) {
    // The model decides what is checkpointed: HF and Megatron wrap every block. number_checkpoints only sizes
    // the contiguous-memory buffers (activation_checkpointing/checkpointing.py configure), not the segments.
    const int64_t stored = m.layers * a.per_layer_checkpoint;  // one input per block
    if (ac.cpu_checkpointing) a.cpu_checkpoints = stored;
    a.gpu_peak = (ac.cpu_checkpointing ? a.per_layer_checkpoint : stored) + a.embedding +
                 std::max(a.per_layer_full, a.head_and_loss);
  } else {
    a.gpu_peak = m.layers * a.per_layer_full + a.embedding + a.head_and_loss;
  }
  return a;
}

}  // namespace zs::core
