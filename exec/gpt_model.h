// GptModel: the decoder of a ModelSpec (GPT-2 or LLaMA layout, learned or rotary positions, LayerNorm or RMSNorm,
// GELU or SwiGLU, tied or untied head) run one DeepSpeed sub-module at a time — the granularity at which the Plan
// fetches, computes and releases parameters — on the reference kernels. The caller owns every buffer: the engine
// hands in gathered parameters, gradient destinations and activation arenas as the Plan places them;
// forward_backward() below runs the whole model on plain buffers (the reference the engine must equal).
//   auto m = GptModel::create(spec, DType::bf16, /*micro_batch=*/4, /*seq_len=*/64);
//   GptModel::Call c = ...;  m->forward(module, c);  m->backward(module, c);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "exec/dtype.h"
#include "exec/kernels_ref.h"

namespace zs::exec {

// A parameter: one untied tensor of core::tensor_table, in forward order (the Plan's parameter order).
struct ParamInfo {
  std::string name;  // "h.0.attn.c_attn.weight"
  int32_t layer = -1;
  std::vector<int64_t> shape;
  int64_t numel = 0;
};

enum class ModuleRole : uint8_t {
  tok_embedding,
  pos_embedding,  // wte, wpe
  norm1,
  qkv,
  q,
  k,
  v,
  attn_out,  // attention half of a block (qkv: GPT-2's fused c_attn)
  norm2,
  mlp_in,
  mlp_gate,
  mlp_out,  // MLP half (mlp_in: c_fc or up_proj; mlp_gate: gate_proj)
  final_norm,
  lm_head
};

// A DeepSpeed sub-module (core::module_table order) and its parameters (ids into params(); tied resolved).
struct ModuleInfo {
  std::string name;
  ModuleRole role = ModuleRole::norm1;
  int32_t layer = -1;
  std::vector<int32_t> params;  // weight first, then bias
};

// Activations of one block inside its arena of layer_bytes(): rows of the storage type ([N, width]) and the
// attention log-sum-exp (fp32). What backward reads, exactly the tensors of Korthikanti et al.'s count without
// dropout masks (memory.cpp's per_layer_full).
struct LayerActs {
  void* x = nullptr;     // block input        [N, C]
  void* ln1 = nullptr;   // norm1 output       [N, C]
  void* qkv = nullptr;   // q, k, v            [N, (NH+2NKV)·HD] (fused rows, or planar q | k | v)
  void* att = nullptr;   // attention output   [N, NH·HD]
  void* x2 = nullptr;    // x + attention      [N, C]
  void* ln2 = nullptr;   // norm2 output       [N, C]
  void* fc = nullptr;    // MLP pre-activation [N, F] or [N, 2F] (gate | up)
  void* act = nullptr;   // MLP activation     [N, F]
  float* lse = nullptr;  // [B, NH, T]
};

// The head's arena of head_bytes(): final-norm input and output, 16-bit logits, fp32 probabilities and losses.
struct HeadActs {
  void* xf = nullptr;
  void* xfn = nullptr;
  void* logits = nullptr;   // [N, V]; backward turns it into dlogits
  float* probs = nullptr;   // [N, V]
  float* losses = nullptr;  // [N]
};

class GptModel {
 public:
  static core::Result<GptModel> create(const core::ModelSpec& m, DType dtype, int64_t micro_batch, int64_t seq_len);

  const core::ModelSpec& spec() const { return m_; }
  DType dtype() const { return dtype_; }
  int64_t micro_batch() const { return B_; }
  int64_t seq_len() const { return T_; }
  int64_t tokens() const { return B_ * T_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  const std::vector<ModuleInfo>& modules() const { return modules_; }
  int64_t parameter_count() const;

  // Arena sizes in bytes (one micro-batch). layer_bytes ≤ memory.cpp's per_layer_full, head_bytes ≤ head_and_loss,
  // checkpoint_bytes == per_layer_checkpoint; the engine checks this against the Plan before it allocates.
  int64_t layer_bytes() const;
  int64_t checkpoint_bytes() const;  // a block input [N, C]
  int64_t head_bytes() const;
  int64_t residual_grad_bytes() const;  // one backward residual-gradient buffer [N, C]
  // Projections park their input's gradient in a dead arena slot (needs ffn_hidden ≥ hidden and heads·head_dim ≥
  // hidden); then a block's dres_out may alias its dres_in, and the residual gradient can live inside the arenas.
  bool parks_in_arena() const;
  LayerActs layer_view(void* arena) const;
  HeadActs head_view(void* arena) const;

  // Everything one module call reads and writes, resolved by the caller.
  struct Call {
    std::vector<const void*> params;  // the module's parameters (full), in ModuleInfo::params order
    std::vector<void*> grads;         // backward: each parameter's gradient destination (full)
    std::vector<GradWrite> grad_write;
    LayerActs layer;  // the module's block
    HeadActs head;
    void* x_out = nullptr;     // forward of the embedding and of a block's last module: where the output goes (the
                               // next block's x, or head.xf); null in a recompute that needs no output
    void* dres_in = nullptr;   // backward: gradient w.r.t. the block's output (head: unused)
    void* dres_out = nullptr;  // backward: gradient w.r.t. the block's input (may alias dres_in when parks_in_arena())
    const int32_t* tokens = nullptr;   // [N]
    const int32_t* targets = nullptr;  // [N]
    float dloss = 1.0f;                // d(loss)/d(token loss): loss scale / (tokens · GA)
    double loss_sum = 0;               // lm_head forward: Σ token losses (double, token order)
    float* host_losses = nullptr;      // lm_head forward: the token losses [N] are copied here (page-locked host
                                       // memory); a device's kernels leave loss_sum to the caller, who sums these
  };
  void forward(size_t module, Call& c) const;
  void backward(size_t module, Call& c) const;

  // GPT-2 initialisation, deterministic per (seed, parameter, element) whatever the partitioning: weights
  // N(0, 0.02), output projections N(0, 0.02/√(2L)), biases 0, norm weights 1. Writes params()[p].numel values.
  void init_param(size_t p, void* out, uint64_t seed) const;
  // The same for elements [begin, end) only (out still points at element 0): ranges may be filled in parallel.
  void init_param(size_t p, void* out, uint64_t seed, int64_t begin, int64_t end) const;

 private:
  GptModel() = default;
  core::ModelSpec m_;
  DType dtype_ = DType::bf16;
  int64_t B_ = 1, T_ = 1;
  int64_t C_ = 0, NH_ = 0, NKV_ = 0, HD_ = 0, F_ = 0, FC_ = 0, V_ = 0;
  bool fused_qkv_ = true;
  std::vector<ParamInfo> params_;
  std::vector<ModuleInfo> modules_;
};

// The whole model on one micro-batch with plain buffers: forward, loss, backward (when `grads` is non-empty).
// Gradients follow the engine's rule: a parameter's first contribution in this call is written with `first`
// (overwrite on GA micro-step 0, accumulate after), later ones (the tied embedding) accumulate.
// Returns the mean token loss of the micro-batch.
double forward_backward(const GptModel& model, const std::vector<const void*>& params, const std::vector<void*>& grads,
                        GradWrite first, const int32_t* tokens, const int32_t* targets, float dloss);

}  // namespace zs::exec
