// Activation memory of one micro-batch (declared in memory.h): what each block saves for backward, by layer type,
// dtype, attention implementation and checkpointing. Korthikanti et al. 2022 ("Reducing Activation Recomputation in
// Large Transformer Models", §4.1), laid out as HF's modeling_<family>.py saves tensors: the LLaMA family without
// dropout, parallel residual blocks (gpt_neox, gptj, falcon), sandwich norms (gemma2/3), q/k norms (qwen3, gemma3),
// DeepSeek's latent attention, sparse MoE blocks, and PEFT's LoRA layers.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/memory.h"

namespace zs::core {

bool stores_attention_scores(const MemoryOptions& o, const Strategy& s) {
  return !o.flash_attention || s.run.launch.attn_implementation == AttnImplementation::eager;
}

namespace {

// One micro-batch's sizes: sb rows of tokens, e bytes per stored element, mask 1 when dropout keeps its masks.
struct Rows {
  int64_t sb = 0, seq = 0, e = 2, mask = 0;
  bool scores = false;  // eager attention keeps [b, a, s, s]
};

// Whether layer l's MLP is a sparse MoE block: DeepSeek's first_k_dense_replace layers, Qwen's mlp_only_layers and
// the layers off decoder_sparse_step keep the dense MLP (modeling_deepseek_v3.py DeepseekV3DecoderLayer,
// modeling_qwen2_moe.py Qwen2MoeDecoderLayer).
bool is_moe_layer(const ModelSpec& m, int64_t l) {
  const MoeSpec& x = m.moe;
  if (!x.enabled() || l < x.first_dense_layers) return false;
  if (std::find(x.dense_layers.begin(), x.dense_layers.end(), l) != x.dense_layers.end()) return false;
  return x.sparse_step <= 1 || (l + 1) % x.sparse_step == 0;
}

// The block's norms and attention. Each norm keeps its input; a parallel block's norms all read the block input,
// one tensor. Flash kernels keep Q, K, V, O and an fp32 log-sum-exp per row; eager keeps the softmax output (and
// its dropout mask and output).
int64_t attention_bytes(const ModelSpec& m, const Rows& r) {
  const int64_t sb = r.sb, e = r.e, h = m.hidden;
  const int64_t norm_inputs = m.parallel_residual ? 1 : m.block_norms;
  int64_t b = norm_inputs * e * sb * h + e * sb * h;  // + the projections' input (the first norm's output)
  if (m.mla.enabled()) {
    // modeling_deepseek_v3.py DeepseekV3Attention: q_a_proj → q_a_layernorm → q_b_proj, kv_a_proj_with_mqa →
    // kv_a_layernorm → kv_b_proj; each latent is kept as a norm input and as the next projection's input.
    const MlaSpec& a = m.mla;
    const int64_t qk = m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim), v = m.heads * a.v_head_dim;
    b += 2 * e * sb * (a.q_lora_rank + a.kv_lora_rank);
    b += e * sb * (2 * qk + v) + e * sb * v;  // Q, K (the rope part broadcast to every head), V; O
  } else {
    const int64_t d = m.head_dim > 0 ? m.head_dim : h / m.heads, q = m.heads * d, kv = m.kv_heads * d;
    b += e * sb * (q + 2 * kv) + e * sb * q;     // Q, K, V; O = the out-projection input
    if (m.qk_norm) b += e * sb * (q + kv);       // q_norm / k_norm inputs (modeling_qwen3.py Qwen3Attention)
  }
  b += r.mask * sb * h;  // attention-output dropout mask
  if (!r.scores) return b + 4 * m.heads * sb;
  const int64_t dropped = r.mask > 0 ? e : 0;
  return b + (e + r.mask + dropped) * m.heads * sb * r.seq;  // softmax output, dropout mask and output
}

// A dense MLP of inner width f on sb rows: its input, and what the activation keeps (SwiGLU: gate, up, act(gate),
// their product; GELU: fc output and GELU output). A parallel block with one norm feeds the attention's input.
int64_t mlp_bytes(const ModelSpec& m, const Rows& r, int64_t f) {
  const int64_t sb = r.sb, e = r.e, h = m.hidden;
  const bool shared_input = m.parallel_residual && m.block_norms == 1;
  int64_t b = shared_input ? 0 : e * sb * h;
  b += (m.activation == Activation::swiglu ? 4 : 2) * e * sb * f;
  return b + r.mask * sb * h;  // MLP dropout mask
}

// A sparse MoE block (modeling_mixtral.py MixtralSparseMoeBlock, modeling_deepseek_v3.py DeepseekV3MoE): the
// router's fp32 probabilities [sb, E] (softmax or sigmoid output), the top-k fp32 weights and the int64 indices of
// the choice and of each expert's rows; top_k copies of every token through the experts, each keeping its input,
// its MLP's activations on expert_ffn and its output (scaled by its routing weight, which needs it) and that weight;
// the shared expert's MLP on every row (DeepSeek: n_shared_experts × moe_intermediate_size; Qwen2-MoE:
// shared_expert_intermediate_size, its output and sigmoid gate kept for the gate's product).
int64_t moe_bytes(const ModelSpec& m, const Rows& r) {
  const MoeSpec& x = m.moe;
  const int64_t sb = r.sb, e = r.e, h = m.hidden, k = x.top_k;
  const int64_t act = m.activation == Activation::swiglu ? 4 : 2;
  int64_t b = e * sb * h;                                  // the block input (router and shared expert input)
  b += 4 * sb * x.experts + 4 * sb * k + 16 * sb * k;      // probabilities, top-k weights, choice and row indices
  b += k * sb * (2 * e * h + act * e * x.expert_ffn + e);  // routed rows: input, MLP, output, routing weight
  const int64_t shared_ffn = x.shared_experts * x.expert_ffn + x.shared_ffn;
  b += act * e * sb * shared_ffn;
  if (x.shared_expert_gate) b += e * sb * h + e * sb;  // shared output and sigmoid(gate) for their product
  return b;
}

// LoRA (PEFT tuners/lora/layer.py Linear.forward: result + lora_B(lora_A(dropout(x))) * scaling): each targeted
// Linear keeps lora_A's output [rows, r] for lora_B, and with lora_dropout > 0 (a separate nn.Dropout per layer)
// the dropped copy of its input [rows, in] for lora_A and its one-byte mask. Without dropout lora_A's input is x,
// already kept. Indexed by layer + 1 (index 0: outside the blocks); the table's lora_A tensors are [r, in].
std::vector<int64_t> lora_bytes_by_layer(const ModelSpec& m, const Rows& r) {
  std::vector<int64_t> out(static_cast<size_t>(m.layers) + 1, 0);
  if (!m.adapter.lora_enabled()) return out;
  const bool dropout = m.adapter.lora.dropout > 0;
  for (const TensorInfo& t : *shared_tensor_table(m)) {
    if (t.name.find(".lora_A.") == std::string::npos || t.shape.size() != 2) continue;
    const auto rows = static_cast<int64_t>(std::llround(static_cast<double>(r.sb) * t.token_fraction));
    int64_t b = r.e * rows * t.shape[0];
    if (dropout) b += (r.e + 1) * rows * t.shape[1];
    const int64_t slot = t.layer >= 0 && t.layer < m.layers ? t.layer + 1 : 0;
    out[static_cast<size_t>(slot)] += b;
  }
  return out;
}

}  // namespace

ActivationBytes activation_bytes(const ModelSpec& m, const Strategy& s, const MemoryOptions& o) {
  ActivationBytes a;
  Rows r;
  r.seq = s.run.seq_len;
  r.sb = s.run.seq_len * s.micro_batch_per_gpu;
  r.e = bytes_per_element(s.model_dtype());  // activations are stored in the model dtype
  r.mask = m.dropout ? 1 : 0;                // a dropout mask is one byte per element (GPT-2, OPT: p = 0.1)
  r.scores = stores_attention_scores(o, s);
  const int64_t sb = r.sb, e = r.e, h = m.hidden;

  // Blocks differ in a MoE model's dense layers and where LoRA targets some layers only: by_layer holds each
  // block's, per_layer_full the largest.
  const std::vector<int64_t> lora = lora_bytes_by_layer(m, r);
  const int64_t attention = attention_bytes(m, r);
  const int64_t dense = mlp_bytes(m, r, m.ffn_hidden), sparse = m.moe.enabled() ? moe_bytes(m, r) : 0;
  int64_t all_layers = 0;
  for (int64_t l = 0; l < m.layers; ++l) {
    const int64_t layer = attention + (is_moe_layer(m, l) ? sparse : dense) + lora[static_cast<size_t>(l) + 1];
    a.per_layer_full = std::max(a.per_layer_full, layer);
    a.by_layer.push_back(layer);
    all_layers += layer;
  }
  a.per_layer_checkpoint = e * sb * h;
  a.embedding = r.mask * sb * h;
  if (m.embedding_norm) a.embedding += e * sb * h;  // bloom word_embeddings_layernorm's input
  // final norm input, head input, lp logits, fp32 logits for the loss, fp32 logit gradient
  a.head_and_loss = 2 * e * sb * h + (e + 4 + 4) * sb * m.vocab + lora[0];
  if (m.embed_proj_dim > 0 && m.embed_proj_dim != h) {
    // OPT project_in / project_out (modeling_opt.py OPTDecoder): each keeps its embed_proj_dim-wide input or output.
    a.embedding += e * sb * m.embed_proj_dim;
    a.head_and_loss += e * sb * m.embed_proj_dim;
  }

  const auto& ac = s.activation_checkpointing;
  if (ac.enabled) {
    // The model decides what is checkpointed: HF and Megatron wrap every block. number_checkpoints only sizes
    // the contiguous-memory buffers (activation_checkpointing/checkpointing.py configure), not the segments.
    const int64_t stored = m.layers * a.per_layer_checkpoint;  // one input per block
    if (ac.cpu_checkpointing) a.cpu_checkpoints = stored;
    a.gpu_peak = (ac.cpu_checkpointing ? a.per_layer_checkpoint : stored) + a.embedding +
                 std::max(a.per_layer_full, a.head_and_loss);
  } else {
    a.gpu_peak = all_layers + a.embedding + a.head_and_loss;
  }
  return a;
}

}  // namespace zs::core
