// Dense families beyond GPT-2 and LLaMA (gemma … bloom): their HF parameter layouts, tensor by tensor in forward
// order with the names HF's `*ForCausalLM.named_parameters()` gives (HF registers a block's norms after its
// attention and MLP; the tables list them where forward runs them, as gpt_tensors and llama_tensors do).
// Every shape comes from the ModelSpec the HF reader (hf_import_families.cpp) filled in.
#include <string>

#include "core/model_table.h"

namespace zs::core {
namespace {

std::string layer_prefix(const char* stack, int64_t i) { return std::string(stack) + std::to_string(i) + "."; }

// The reader fills head_dim; a spec built by hand may leave it 0 ("derive").
int64_t head_dim_of(const ModelSpec& m) {
  if (m.head_dim > 0) return m.head_dim;
  return m.heads > 0 ? m.hidden / m.heads : 0;
}

// Gemma, Gemma2, Gemma3 (text) and Qwen3: LLaMA's names, with Gemma2/3's sandwich norms (block_norms 4:
// post_attention_layernorm closes the attention, pre/post_feedforward_layernorm wrap the MLP) and Qwen3/Gemma3's
// RMSNorm over head_dim on q and k. Qwen3 norms each projection as it comes (q_proj, q_norm, k_proj, k_norm);
// Gemma3 projects q, k and v first.
void llama_like_tensors(const ModelSpec& m, TableBuilder& b) {
  const int64_t h = m.hidden, d = head_dim_of(m), q = m.heads * d, kv = m.kv_heads * d, f = m.ffn_hidden;
  const bool sandwich = m.block_norms == 4, norm_each = m.arch == Arch::qwen3;
  b.add("model.embed_tokens", "weight", -1, {m.vocab, h}, false, ModuleRole::embedding);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = layer_prefix("model.layers.", i), a = p + "self_attn.";
    b.norm(p + "input_layernorm", i);
    b.linear(a + "q_proj", i, {q, h}, m.qkv_bias, q, ModuleRole::qkv);
    if (m.qk_norm && norm_each) b.norm(a + "q_norm", i, d);
    b.linear(a + "k_proj", i, {kv, h}, m.qkv_bias, kv, ModuleRole::qkv);
    if (m.qk_norm && norm_each) b.norm(a + "k_norm", i, d);
    b.linear(a + "v_proj", i, {kv, h}, m.qkv_bias, kv, ModuleRole::qkv);
    if (m.qk_norm && !norm_each) {
      b.norm(a + "q_norm", i, d);
      b.norm(a + "k_norm", i, d);
    }
    b.linear(a + "o_proj", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
    b.norm(p + "post_attention_layernorm", i);
    if (sandwich) b.norm(p + "pre_feedforward_layernorm", i);
    b.linear(p + "mlp.gate_proj", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_gate);
    b.linear(p + "mlp.up_proj", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_in);
    b.linear(p + "mlp.down_proj", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
    if (sandwich) b.norm(p + "post_feedforward_layernorm", i);
  }
  b.norm("model.norm", -1);
  b.add("lm_head", "weight", -1, {m.vocab, h}, true, ModuleRole::head, m.tied_embeddings);
}

// Phi3ForCausalLM: fused qkv_proj [(heads + 2·kv)·d, h] and gate_up_proj [2·ffn, h] (gate rows first).
void phi3_tensors(const ModelSpec& m, TableBuilder& b) {
  const int64_t h = m.hidden, d = head_dim_of(m), q = m.heads * d, qkv = q + 2 * m.kv_heads * d, f = m.ffn_hidden;
  b.add("model.embed_tokens", "weight", -1, {m.vocab, h}, false, ModuleRole::embedding);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = layer_prefix("model.layers.", i);
    b.norm(p + "input_layernorm", i);
    b.linear(p + "self_attn.qkv_proj", i, {qkv, h}, m.qkv_bias, qkv, ModuleRole::qkv);
    b.linear(p + "self_attn.o_proj", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
    b.norm(p + "post_attention_layernorm", i);
    b.linear(p + "mlp.gate_up_proj", i, {2 * f, h}, m.mlp_bias, 2 * f, ModuleRole::mlp_in);
    b.linear(p + "mlp.down_proj", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
  }
  b.norm("model.norm", -1);
  b.add("lm_head", "weight", -1, {m.vocab, h}, true, ModuleRole::head, m.tied_embeddings);
}

// The names of one BLOOM-like layout: fused query_key_value, dense, dense_h_to_4h, dense_4h_to_h (GPT-NeoX,
// Falcon, BLOOM), under different stacks.
struct FusedNames {
  const char* embed;       // token embedding module
  const char* embed_norm;  // BLOOM's word_embeddings_layernorm (used when m.embedding_norm)
  const char* stack;       // "gpt_neox.layers." / "transformer.h."
  const char* attn;        // "attention." / "self_attention."
  const char* norm1;       // the block's first norm
  const char* norm2;       // the block's second norm, when block_norms is 2
  const char* final_norm;
  const char* head;
};

// One norm before attention (block_norms 1: falcon-7b shares it with the MLP), or two. Falcon's parallel blocks
// with two norms (new_decoder_architecture) compute ln_attn and ln_mlp before the attention; sequential blocks
// (and GPT-NeoX's parallel residual, whose second norm reads the block input after the attention) run the
// second norm between attention and MLP.
void fused_qkv_tensors(const ModelSpec& m, TableBuilder& b, const FusedNames& n) {
  const int64_t h = m.hidden, d = head_dim_of(m), q = m.heads * d, qkv = q + 2 * m.kv_heads * d, f = m.ffn_hidden;
  const bool norms_first = m.arch == Arch::falcon && m.parallel_residual && m.block_norms == 2;
  b.add(n.embed, "weight", -1, {m.vocab, h}, false, ModuleRole::embedding);
  if (m.embedding_norm) b.norm(n.embed_norm, -1);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = layer_prefix(n.stack, i), a = p + n.attn;
    b.norm(p + n.norm1, i);
    if (norms_first) b.norm(p + n.norm2, i);
    b.linear(a + "query_key_value", i, {qkv, h}, m.qkv_bias, qkv, ModuleRole::qkv);
    b.linear(a + "dense", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
    if (m.block_norms == 2 && !norms_first) b.norm(p + n.norm2, i);
    b.linear(p + "mlp.dense_h_to_4h", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_in);
    b.linear(p + "mlp.dense_4h_to_h", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
  }
  b.norm(n.final_norm, -1);
  b.add(n.head, "weight", -1, {m.vocab, h}, true, ModuleRole::head, m.tied_embeddings);
}

void gpt_neox_tensors(const ModelSpec& m, TableBuilder& b) {
  fused_qkv_tensors(m, b,
                    {"gpt_neox.embed_in", "", "gpt_neox.layers.", "attention.", "input_layernorm",
                     "post_attention_layernorm", "gpt_neox.final_layer_norm", "embed_out"});
}

void falcon_tensors(const ModelSpec& m, TableBuilder& b) {
  const bool two_parallel = m.parallel_residual && m.block_norms == 2;
  fused_qkv_tensors(m, b,
                    {"transformer.word_embeddings", "", "transformer.h.", "self_attention.",
                     two_parallel ? "ln_attn" : "input_layernorm", two_parallel ? "ln_mlp" : "post_attention_layernorm",
                     "transformer.ln_f", "lm_head"});
}

void bloom_tensors(const ModelSpec& m, TableBuilder& b) {
  fused_qkv_tensors(m, b,
                    {"transformer.word_embeddings", "transformer.word_embeddings_layernorm", "transformer.h.",
                     "self_attention.", "input_layernorm", "post_attention_layernorm", "transformer.ln_f", "lm_head"});
}

// GPTJForCausalLM: one ln_1 feeds the attention and the MLP (parallel residual); the head has a bias.
void gptj_tensors(const ModelSpec& m, TableBuilder& b) {
  const int64_t h = m.hidden, q = m.heads * head_dim_of(m), f = m.ffn_hidden;
  b.add("transformer.wte", "weight", -1, {m.vocab, h}, false, ModuleRole::embedding);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = layer_prefix("transformer.h.", i);
    b.norm(p + "ln_1", i);
    for (const char* proj : {"attn.q_proj", "attn.k_proj", "attn.v_proj"})
      b.linear(p + proj, i, {q, h}, m.qkv_bias, q, ModuleRole::qkv);
    b.linear(p + "attn.out_proj", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
    b.linear(p + "mlp.fc_in", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_in);
    b.linear(p + "mlp.fc_out", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
  }
  b.norm("transformer.ln_f", -1);
  b.add("lm_head", "weight", -1, {m.vocab, h}, true, ModuleRole::head, m.tied_embeddings);
  if (m.head_bias) b.add("lm_head", "bias", -1, {m.vocab}, false, ModuleRole::head);
}

// OPTForCausalLM: learned positions with position_offset extra rows; embeddings of width embed_proj_dim (when
// set) projected in to hidden and out again before the head (no biases on the projections).
void opt_tensors(const ModelSpec& m, TableBuilder& b) {
  const int64_t h = m.hidden, q = m.heads * head_dim_of(m), f = m.ffn_hidden;
  const int64_t e = m.embed_proj_dim > 0 ? m.embed_proj_dim : h;
  const std::string dec = "model.decoder.";
  b.add(dec + "embed_tokens", "weight", -1, {m.vocab, e}, false, ModuleRole::embedding);
  b.add(dec + "embed_positions", "weight", -1, {m.max_seq_len + m.position_offset, h}, false, ModuleRole::positions);
  if (m.embed_proj_dim > 0) b.linear(dec + "project_in", -1, {h, e}, false, 0, ModuleRole::none);
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = dec + layer_prefix("layers.", i);
    b.norm(p + "self_attn_layer_norm", i);
    for (const char* proj : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"})
      b.linear(p + proj, i, {q, h}, m.qkv_bias, q, ModuleRole::qkv);
    b.linear(p + "self_attn.out_proj", i, {h, q}, m.attn_out_bias, h, ModuleRole::attn_out);
    b.norm(p + "final_layer_norm", i);
    b.linear(p + "fc1", i, {f, h}, m.mlp_bias, f, ModuleRole::mlp_in);
    b.linear(p + "fc2", i, {h, f}, m.mlp_bias, h, ModuleRole::mlp_out);
  }
  b.norm(dec + "final_layer_norm", -1);
  if (m.embed_proj_dim > 0) b.linear(dec + "project_out", -1, {e, h}, false, 0, ModuleRole::none);
  b.add("lm_head", "weight", -1, {m.vocab, e}, true, ModuleRole::head, m.tied_embeddings);
}

}  // namespace

void dense_family_tensors(const ModelSpec& m, TableBuilder& b) {
  switch (m.arch) {
    case Arch::gemma:
    case Arch::gemma2:
    case Arch::gemma3:
    case Arch::qwen3:
      llama_like_tensors(m, b);
      break;
    case Arch::phi3:
      phi3_tensors(m, b);
      break;
    case Arch::gpt_neox:
      gpt_neox_tensors(m, b);
      break;
    case Arch::falcon:
      falcon_tensors(m, b);
      break;
    case Arch::bloom:
      bloom_tensors(m, b);
      break;
    case Arch::gptj:
      gptj_tensors(m, b);
      break;
    case Arch::opt:
      opt_tensors(m, b);
      break;
    default:
      break;  // gpt and llama (model.cpp), the MoE families (model_moe.cpp)
  }
}

}  // namespace zs::core
