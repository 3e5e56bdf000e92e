// LoRA and QLoRA in the tensor table, the layout, the memory model and the Plan: PEFT's parameter counts, frozen
// parameters as DeepSpeed holds them (stage_1_and_2.py keeps only requires_grad parameters in bit16_groups;
// stage3.py _get_trainable_parameter_groups), bitsandbytes' packed 4-bit storage and its constants.
#include <catch2/catch.hpp>

#include <string>

#include "core/adapter.h"
#include "core/hardware.h"
#include "core/layout.h"
#include "core/memory.h"
#include "core/model.h"
#include "core/paths.h"
#include "core/plan.h"
#include "core/scheduler.h"
#include "core/strategy.h"

using namespace zs::core;

namespace {

ModelSpec llama2_7b() {
  auto m = load_model("llama2-7b");
  REQUIRE(m.ok());
  return *m;
}

ModelSpec with_lora(ModelSpec m, int64_t r, std::vector<std::string> targets) {
  m.adapter.kind = AdapterKind::lora;
  m.adapter.lora.r = r;
  m.adapter.lora.alpha = static_cast<double>(2 * r);
  m.adapter.lora.all_linear = targets.size() == 1 && targets[0] == "all-linear";
  if (!m.adapter.lora.all_linear) m.adapter.lora.target_modules = std::move(targets);
  m.adapter.lora.source = "adapter_config.json";
  return m;
}

ModelSpec with_nf4(ModelSpec m, const std::string& storage) {
  m.adapter.quant.kind = QuantKind::nf4;
  m.adapter.quant.double_quant = true;
  m.adapter.quant.storage = storage;
  m.adapter.quant.compute_dtype = "bfloat16";
  return m;
}

Strategy strategy(const std::string& json, int64_t gpus, int64_t seq = 4096) {
  RunSettings run;
  run.gpus_per_node = gpus;
  run.seq_len = seq;
  auto s = parse_ds_config_text(json, "inline.json", run);
  INFO(json);
  REQUIRE(s.ok());
  return *s;
}

Hardware a100() {
  auto h = load_hardware("dgx-a100-80gb");
  REQUIRE(h.ok());
  return *h;
}

const TensorInfo* find(const std::vector<TensorInfo>& t, const std::string& name) {
  for (const auto& x : t)
    if (x.name == name) return &x;
  return nullptr;
}

}  // namespace

TEST_CASE("LoRA trainable and total parameters equal PEFT's print_trainable_parameters", "[adapter_memory]") {
  // PEFT's README example (Llama-2-7B, r 8 on q_proj and v_proj): "trainable params: 4,194,304 || all params:
  // 6,742,609,920". 32 layers x 2 targets x 8 x (4096 + 4096).
  const ModelSpec q_v = with_lora(llama2_7b(), 8, {"q_proj", "v_proj"});
  CHECK(trainable_parameter_count(q_v) == 4194304);
  CHECK(parameter_count(q_v) == 6742609920);
  // all-linear at r 16: per layer 4 x 16 x 8192 (attention) + 3 x 16 x (4096 + 11008) (MLP) = 1,249,280; x 32.
  const ModelSpec all = with_lora(llama2_7b(), 16, {"all-linear"});
  CHECK(trainable_parameter_count(all) == 39976960);
  CHECK(parameter_count(all) == 6738415616 + 39976960);
  // PEFT's layer names: the base weight moves under base_layer, the adapter is lora_A [r, in] / lora_B [out, r].
  const auto t = tensor_table(all);
  const TensorInfo* base = find(t, "model.layers.0.mlp.down_proj.base_layer.weight");
  const TensorInfo* a = find(t, "model.layers.0.mlp.down_proj.lora_A.default.weight");
  const TensorInfo* b = find(t, "model.layers.0.mlp.down_proj.lora_B.default.weight");
  REQUIRE(base);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(base->trainable);
  CHECK(a->trainable);
  CHECK(a->shape == std::vector<int64_t>{16, 11008});
  CHECK(b->shape == std::vector<int64_t>{4096, 16});
  // all-linear leaves the output layer alone (peft tuners_utils _maybe_include_all_linear_layers).
  CHECK(find(t, "lm_head.lora_A.default.weight") == nullptr);
  const TensorInfo* norm = find(t, "model.norm.weight");
  REQUIRE(norm);
  CHECK_FALSE(norm->trainable);
}

TEST_CASE("LoRA FLOPs: the adapter's GEMMs, and no weight gradient for the frozen base", "[adapter_memory]") {
  const ModelSpec full = llama2_7b();
  const ModelSpec lora = with_lora(full, 16, {"all-linear"});
  const FlopsPerToken f = flops_per_token(full, 4096), l = flops_per_token(lora, 4096);
  CHECK(l.forward_gemm == Approx(f.forward_gemm + 2.0 * 39976960));
  // Every base matmul (the head included) is frozen: the backward is 2 x forward less one forward of them.
  CHECK(l.frozen_gemm == Approx(f.forward_gemm));
  CHECK(l.backward() == Approx(2.0 * l.forward() - f.forward_gemm));
}

TEST_CASE("LoRA under ZeRO-2: frozen base whole on every GPU, states for the adapter only", "[adapter_memory]") {
  const ModelSpec m = with_lora(llama2_7b(), 16, {"all-linear"});
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                  "zero_optimization": {"stage": 2}})",
                              8);
  const MemoryReport r = memory_model(m, a100(), s);
  const int64_t T = 39976960, P = 6738415616 + T, part = (T + 7) / 8;
  CHECK(r.sizes.trainable == T);
  CHECK(r.sizes.stored == P);
  CHECK(r.sizes.partition == part);
  const TierReport& gpu = r.tier(Tier::gpu);
  CHECK(gpu.item("lp_params") == 2 * P);  // trainable and frozen, whole on each rank
  CHECK(gpu.item("lp_grads") == 2 * part);
  CHECK(gpu.item("fp32_master") == 4 * part);
  CHECK(gpu.item("adam_m_v") == 8 * part);
  CHECK(gpu.item("quant_constants") == 0);
  // The layout: frozen parameters sit outside the flat partition and belong to no optimizer group.
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  CHECK(l.flat_partition == part);
  int64_t frozen = 0;
  for (const auto& p : l.params)
    if (!p.trainable) {
      frozen += p.numel;
      CHECK(p.part == 0);
      CHECK(p.group == -1);
    }
  CHECK(frozen == P - T);
  CHECK(l.frozen_elements == P - T);
}

TEST_CASE("QLoRA: 4-bit packed base and bitsandbytes constants", "[adapter_memory]") {
  const ModelSpec m = with_nf4(with_lora(llama2_7b(), 16, {"all-linear"}), "uint8");
  const auto t = tensor_table(m);
  const TensorInfo* q = find(t, "model.layers.0.self_attn.q_proj.base_layer.weight");
  REQUIRE(q);
  CHECK(q->quant_bits == 4);
  CHECK(q->params == 4096 * 4096);
  CHECK(q->numel == 4096 * 4096 / 4);  // params / 2 bytes, counted in 16-bit elements
  // The embedding, norms and head stay 16-bit (transformers' get_keys_to_not_convert keeps the output layer).
  const TensorInfo* head = find(t, "lm_head.weight");
  REQUIRE(head);
  CHECK(head->quant_bits == 0);
  // HF and PEFT count a 4-bit weight by its logical elements.
  CHECK(parameter_count(m) == 6738415616 + 39976960);

  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                  "zero_optimization": {"stage": 2}})",
                              1);
  const MemoryReport r = memory_model(m, a100(), s);
  // The 32 blocks' 7 Linears: 32 x (4 x 4096^2 + 3 x 4096 x 11008) = 6,476,005,376 weights at half a byte; the
  // rest (embedding, head, norms: 262,410,240) and the adapter at 2 bytes.
  const int64_t linear = 6476005376, rest = 6738415616 - linear, T = 39976960;
  CHECK(r.tier(Tier::gpu).item("lp_params") == linear / 2 + 2 * (rest + T));
  // Double quantisation: one 8-bit absmax per 64 weights and one fp32 absmax per 256 of those blocks, per weight
  // (4096^2: 262,144 + 4 x 1,024 bytes; 4096 x 11008: 704,512 + 4 x 2,752).
  const int64_t per_layer = 4 * (262144 + 4 * 1024) + 3 * (704512 + 4 * 2752);
  CHECK(r.sizes.quant_constant_bytes == 32 * per_layer);
  CHECK(r.tier(Tier::gpu).item("quant_constants") == 32 * per_layer);
  CHECK(r.problems.empty());
}

TEST_CASE("QLoRA under ZeRO-3 needs bnb_4bit_quant_storage in the model dtype", "[adapter_memory]") {
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                  "zero_optimization": {"stage": 3}})",
                              8);
  const ModelSpec uint8_storage = with_nf4(with_lora(llama2_7b(), 16, {"all-linear"}), "uint8");
  const MemoryReport bad = memory_model(uint8_storage, a100(), s);
  REQUIRE(bad.problems.size() == 1);
  CHECK_THAT(bad.problems[0], Catch::Contains("bnb_4bit_quant_storage \"uint8\""));
  const ModelSpec bf16_storage = with_nf4(with_lora(llama2_7b(), 16, {"all-linear"}), "bfloat16");
  const MemoryReport good = memory_model(bf16_storage, a100(), s);
  CHECK(good.problems.empty());
  // Every parameter partitioned (frozen ones too), the optimizer's partition only the adapter's.
  const Layout l = make_layout(bf16_storage, s, Schedule::deepspeed);
  int64_t frozen_parts = 0, trainable_parts = 0;
  for (const auto& p : l.params) (p.trainable ? trainable_parts : frozen_parts) += (p.numel + 7) / 8;
  CHECK(l.frozen_elements == frozen_parts);
  CHECK(l.partition_elements == trainable_parts);
  int64_t sub_group_elements = 0;
  for (int64_t g : l.sub_groups) sub_group_elements += g;
  CHECK(sub_group_elements == trainable_parts);
}

TEST_CASE("A quantised base without LoRA, and LoRA targets that match nothing, are refused", "[adapter_memory]") {
  ModelSpec q = with_nf4(llama2_7b(), "uint8");
  q.source = "config.json";
  const Status no_lora = validate_adapter(q);
  REQUIRE_FALSE(no_lora.ok());
  CHECK_THAT(no_lora.message(), Catch::Contains("cannot be fully fine-tuned"));
  const Status none = validate_adapter(with_lora(llama2_7b(), 8, {"c_attn"}));
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.message(), Catch::Contains("target_modules"));
  CHECK(validate_adapter(with_lora(llama2_7b(), 8, {"q_proj"})).ok());
}

TEST_CASE("A LoRA plan reduces and steps the adapter only", "[adapter_memory]") {
  const ModelSpec m = with_lora(llama2_7b(), 16, {"all-linear"});
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                                  "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})",
                              8, 1024);
  const Plan p = make_plan(m, a100(), s);
  double reduced = 0, stepped = 0;
  for (const auto& op : p.ops) {
    if (op.kind == OpKind::allreduce && op.purpose == Purpose::allreduce_grads) reduced += static_cast<double>(op.bytes);
    if (op.kind == OpKind::adam_cpu) stepped += static_cast<double>(op.elements);
  }
  const int64_t T = 39976960;
  CHECK(reduced == Approx(2.0 * T));               // bf16 gradients of the adapter, once
  CHECK(stepped == Approx(static_cast<double>((T + 7) / 8)));  // this rank's partition of them
}

TEST_CASE("QLoRA compute: each pass dequantises the packed base weight", "[adapter_memory]") {
  // bitsandbytes MatMul4Bit: read the packed weight and its constants, write the 16-bit copy, then the GEMM.
  const ModelSpec lora = with_lora(llama2_7b(), 16, {"all-linear"});
  const ModelSpec qlora = with_nf4(lora, "bfloat16");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}})", 1, 1024);
  auto cost_of = [&s](const ModelSpec& m, const std::string& module) {
    const auto modules = module_table(m);
    const auto tensors = tensor_table(m);
    const auto costs = sched::forward_costs(m, s, MemoryOptions{}, modules, tensors);
    for (size_t i = 0; i < modules.size(); ++i)
      if (modules[i].name == module) return costs[i];
    FAIL("no module " << module);
    return sched::ComputeCost{};
  };
  const std::string q = "model.layers.0.self_attn.q_proj.base_layer";
  const sched::ComputeCost a = cost_of(lora, q), b = cost_of(qlora, q);
  const int64_t n = 4096 * 4096;
  CHECK(b.gemm_flops == a.gemm_flops);  // the same GEMM, from the logical parameter count
  CHECK(b.frozen_gemm_flops == a.frozen_gemm_flops);
  // n / 2 packed bytes, n / 64 8-bit absmax + n / 64 / 256 fp32 second-level absmax, 2n bytes written.
  CHECK(b.mem_bound_bytes - a.mem_bound_bytes == n / 2 + n / 64 + 4 * (n / 64 / 256) + 2 * n);
}
