// Where zerosim followed DeepSpeed's papers instead of its code (../shared/DEEPSPEED-AUDIT.md): one test per item,
// each naming the DeepSpeed v0.19.6 file and function it follows. Item 12 (config keys) is in test_strategy.cpp.
#include <algorithm>
#include <array>
#include <set>

#include "core/layout.h"
#include "core/memory.h"
#include "core/paths.h"
#include "tests/core/test_plan_helpers.h"

using namespace plan_test;

namespace {

const MemoryItem* find_item(const TierReport& t, const std::string& key) {
  for (const auto& i : t.items)
    if (i.key == key) return &i;
  return nullptr;
}

bool has_problem(const MemoryReport& r, const std::string& text) {
  for (const auto& p : r.problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

// 1. stage3.py _create_fp16_partitions_with_defragmentation: should_create_fp16_flat_reuse_buffer is true only when
// some sub-group has no flat CPU buffer; partitioned_param_swapper.py reserve_partitioned_swap_space then pins
// Σ io_aligned(t.ds_numel) over the largest sub-group's parameters — their full sizes, not their partitions.
TEST_CASE("audit 1: the NVMe swap-out buffer holds the largest sub-group at full parameter size", "[audit][memory]") {
  const ModelSpec m = model("llama2-70b");
  const Hardware h = hardware("dgx-a100-80gb");
  const Strategy s = shipped_strategy("zero3-offload-nvme", m, 8);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  REQUIRE(l.lp_reuse_buffer_elements > 0);
  const int64_t largest_part = *std::max_element(l.sub_groups.begin(), l.sub_groups.end());
  // Full sizes of that sub-group's parameters: about world times its partition elements.
  CHECK(l.lp_reuse_buffer_elements >= 8 * largest_part - 8 * static_cast<int64_t>(l.params.size()));
  const MemoryReport r = memory_model(m, h, s);
  const MemoryItem* reserve = find_item(r.tier(Tier::cpu), "param_swap_reserve");
  REQUIRE(reserve != nullptr);
  CHECK(reserve->pinned);
  CHECK(reserve->bytes == 8 * 2 * l.lp_reuse_buffer_elements);  // 8 local ranks, bf16
  CHECK(reserve->bytes > 100 * kGiB);  // the audit's "+100 GiB per node"
  // Everything within max_in_cpu: no sub-group without a flat buffer, no swap-out buffer.
  Strategy in_cpu = s;
  in_cpu.zero.offload_param.max_in_cpu = 100000000000;
  CHECK(memory_model(m, h, in_cpu).tier(Tier::cpu).item("param_swap_reserve") == 0);
}

// 2. partition_parameters.py _partition_param: with remote_device nvme every swappable partition takes a swap
// buffer at zero.Init (partitioned_param_swapper.py get_buffer asserts numel <= buffer_size), before stage3.py
// decides by max_in_cpu which sub-groups stay in CPU memory.
TEST_CASE("audit 2: buffer_size must hold every swappable partition, whatever max_in_cpu keeps", "[audit][memory]") {
  const ModelSpec m = model("gpt2-10b");  // 50257 x 4096 = 205.9M-element embedding
  const Hardware h = hardware("dgx-a100-80gb");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme",
      "buffer_size": 1e8, "max_in_cpu": 1e11}}})",
                              m, 1);
  const MemoryReport r = memory_model(m, h, s);
  CHECK(r.sizes.param_partition_on_nvme == 0);  // max_in_cpu keeps every sub-group in CPU memory
  CHECK(r.sizes.largest_nvme_param_partition == 50257LL * 4096);
  CHECK(has_problem(r, "offload_param.buffer_size 100000000"));
  CHECK_FALSE(r.fits);
}

// 3. stage_1_and_2.py average_tensor → allreduce_and_scatter → allreduce_bucket → dist.all_reduce
// (use_multi_rank_bucket_allreduce defaults true); stage3.py __reduce_and_partition_ipg_grads:
// reduce_scatter_coalesced, or __avg_scatter_contiguous_grads (dist.all_reduce) with reduce_scatter false.
TEST_CASE("audit 3: ZeRO-1/2 all-reduce their gradient buckets; ZeRO-3 reduce_scatter false too", "[audit][plan]") {
  const ModelSpec m = model("gpt2-355m");
  const Hardware h = hardware("dgx-a100-80gb");
  auto kinds = [&](const std::string& zero) {
    const Plan p = make_plan(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": )" + zero + "}", m, 8));
    std::set<OpKind> k;
    for (const Op& op : p.ops)
      if (op.purpose == Purpose::reduce_grads || op.purpose == Purpose::allreduce_grads) k.insert(op.kind);
    return k;
  };
  CHECK(kinds(R"({"stage": 1})") == std::set<OpKind>{OpKind::allreduce});
  CHECK(kinds(R"({"stage": 2})") == std::set<OpKind>{OpKind::allreduce});
  CHECK(kinds(R"({"stage": 2, "use_multi_rank_bucket_allreduce": false})") == std::set<OpKind>{OpKind::reduce_scatter});
  CHECK(kinds(R"({"stage": 3})") == std::set<OpKind>{OpKind::reduce_scatter});
  CHECK(kinds(R"({"stage": 3, "reduce_scatter": false})") == std::set<OpKind>{OpKind::allreduce});
}

// 4. stage_1_and_2.py average_tensor reduces on reduction_stream only with overlap_comm, else on the current
// stream; stage3.py's reduce_and_partition_stream and parameter_offload.py's all-gather stream likewise. Stage 1
// with overlap_comm installs the gradient hooks (create_reduce_and_remove_grad_hooks) and reduces inside backward.
TEST_CASE("audit 4: overlap_comm decides the collectives' stream; stage 1 overlap reduces in backward",
          "[audit][plan]") {
  const ModelSpec m = model("gpt2-355m");
  const Hardware h = hardware("dgx-a100-80gb");
  auto plan = [&](const std::string& zero) {
    return make_plan(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": )" + zero + "}", m, 8));
  };
  auto streams = [](const Plan& p, Purpose why) {
    std::set<Stream> s;
    for (const Op& op : p.ops)
      if (op.purpose == why) s.insert(op.stream);
    return s;
  };
  CHECK(streams(plan(R"({"stage": 2, "overlap_comm": false})"), Purpose::allreduce_grads) ==
        std::set<Stream>{Stream::compute});
  CHECK(streams(plan(R"({"stage": 2, "overlap_comm": true})"), Purpose::allreduce_grads) ==
        std::set<Stream>{Stream::comm});
  CHECK(streams(plan(R"({"stage": 3, "overlap_comm": false})"), Purpose::gather_params) ==
        std::set<Stream>{Stream::compute});
  CHECK(streams(plan(R"({"stage": 3})"), Purpose::gather_params) == std::set<Stream>{Stream::comm});
  // Stage 1: after the last backward op without overlap_comm, interleaved with backward with it.
  auto first_reduce_before_last_backward = [](const Plan& p) {
    int64_t first_reduce = -1, last_backward = -1;
    for (const Op& op : p.ops) {
      if (op.purpose == Purpose::allreduce_grads && first_reduce < 0) first_reduce = op.id;
      if (op.kind == OpKind::backward) last_backward = op.id;
    }
    return first_reduce >= 0 && first_reduce < last_backward;
  };
  CHECK_FALSE(first_reduce_before_last_backward(plan(R"({"stage": 1, "reduce_bucket_size": 5e7})")));
  CHECK(first_reduce_before_last_backward(plan(R"({"stage": 1, "overlap_comm": true, "reduce_bucket_size": 5e7})")));
}

// 6. engine.py _do_optimizer_sanity_check returns BFLOAT16 for bf16 + stage 1 + grad_accum_dtype fp32 without
// offload; bf16_optimizer.py _setup_for_real_optimizer keeps a full fp32 gradient buffer (fp32_groups_gradients_flat)
// and the engine reduces it with buffered_allreduce_fallback (MEMORY_OPT_ALLREDUCE_SIZE buckets, cast to the
// communication dtype, bf16 unless configured).
TEST_CASE("audit 6: bf16 + stage 1 + fp32 grad accumulation is BF16_Optimizer", "[audit][memory][plan]") {
  const ModelSpec m = model("llama2-7b");
  const Hardware h = hardware("dgx-a100-80gb");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "data_types": {"grad_accum_dtype": "fp32"}, "zero_optimization": {"stage": 1}})",
                              m, 8);
  REQUIRE(uses_bf16_optimizer(s));
  const int64_t P = parameter_count(m);
  const MemoryReport r = memory_model(m, h, s);
  CHECK(r.tier(Tier::gpu).item("fp32_grads") == 4 * P);  // full, not a partition
  CHECK(r.tier(Tier::gpu).item("comm_buckets") == 0);    // no IPG bucket
  const Plan p = make_plan(m, h, s);
  int64_t bucket_bytes = 0, allreduced = 0;
  for (const Op& op : p.ops) {
    if (op.purpose == Purpose::alloc_allreduce_bucket) bucket_bytes = std::max(bucket_bytes, op.mem_delta[0]);
    if (op.purpose == Purpose::allreduce_grads) allreduced += op.bytes;
  }
  CHECK(allreduced == 2 * P);  // bf16 on the wire
  CHECK(bucket_bytes <= (4 + 2) * kMemoryOptAllreduceSize + (4 + 2) * r.sizes.largest_param);
  CHECK(bucket_bytes > (4 + 2) * kMemoryOptAllreduceSize / 2);
  // With offload, or another stage, or bf16 gradient accumulation: the ZeRO optimizer.
  CHECK_FALSE(uses_bf16_optimizer(strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 1}})", m, 8)));
  CHECK_FALSE(uses_bf16_optimizer(strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "data_types": {"grad_accum_dtype": "fp32"}, "zero_optimization": {"stage": 1,
    "offload_optimizer": {"device": "cpu"}}})", m, 8)));
}

// 7. activation_checkpointing/checkpointing.py configure: number_checkpoints only sizes the contiguous-memory
// buffers; the model (HF gradient_checkpointing, Megatron) decides what is checkpointed — every block.
TEST_CASE("audit 7: number_checkpoints does not change what is checkpointed", "[audit][memory]") {
  const ModelSpec m = model("llama2-7b");
  const Hardware h = hardware("dgx-a100-80gb");
  auto gpu = [&](const std::string& ac) {
    const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 8, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3}, "activation_checkpointing": )" + ac + "}", m, 8, 1, false, 4096);
    return memory_model(m, h, s).tier(Tier::gpu).item("activations");
  };
  CHECK(gpu(R"({"number_checkpoints": 4})") == gpu("{}"));
}

// 9. stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu: micro-steps after the first read the host sum back
// and add on the GPU (accumulate_gradients); every micro-step copies the sum out (copy_gradients_to_cpu).
TEST_CASE("audit 9: ZeRO-2 offload with GA copies the gradient sum out on every micro-step", "[audit][plan]") {
  const ModelSpec m = model("gpt2-124m");
  const Hardware h = hardware("dgx-a100-80gb");
  const Plan p = make_plan(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 3,
    "bf16": {"enabled": true}, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}})", m, 1));
  std::array<int64_t, 3> down{}, up{};
  for (const Op& op : p.ops) {
    if (op.purpose != Purpose::offload_grads) continue;
    (op.kind == OpKind::d2h ? down : up)[static_cast<size_t>(op.micro_step)] += op.bytes;
  }
  const int64_t lp_grads = 2 * parameter_count(m);
  CHECK(down == std::array<int64_t, 3>{lp_grads, lp_grads, lp_grads});
  CHECK(up == std::array<int64_t, 3>{0, lp_grads, lp_grads});
}

// 10. Pinned or not: stage3.py _create_fp32_partitions clones the master (pageable);
// _create_param_groups_fp16_flat_cpu_memory always pins the lp flat buffer; stage_1_and_2.py pins its CPU buffers
// only with cpu_offload_pin_memory (offload_optimizer.pin_memory).
TEST_CASE("audit 10: which host buffers DeepSpeed pins", "[audit][memory]") {
  const ModelSpec m = model("llama2-7b");
  const Hardware h = hardware("dgx-a100-80gb");
  auto pinned = [&](const std::string& zero, const std::string& key) {
    const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": )" + zero + "}", m, 8);
    const MemoryReport r = memory_model(m, h, s);  // kept: the item points into it
    const MemoryItem* i = find_item(r.tier(Tier::cpu), key);
    REQUIRE(i != nullptr);
    return i->pinned;
  };
  const std::string z3 = R"({"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true},
    "offload_param": {"device": "cpu", "pin_memory": false}})";
  CHECK_FALSE(pinned(z3, "fp32_master"));
  CHECK(pinned(z3, "fp32_grads"));
  CHECK(pinned(z3, "lp_params"));  // pin_memory false, pinned all the same
  const std::string z2 = R"({"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": false}})";
  for (const char* key : {"fp32_master", "fp32_grads", "lp_copy_back", "offload_staging"}) {
    INFO(key);
    CHECK_FALSE(pinned(z2, key));
  }
  CHECK(pinned(R"({"stage": 2, "offload_optimizer": {"device": "cpu", "pin_memory": true}})", "fp32_grads"));
}

// 11. swap_tensor/pipelined_optimizer_swapper.py: a sub-group in flight takes 4 buffers (_swap_in_optimizer_state:
// its tensors and gradient); pipeline_read adds the next sub-group's and pipeline_write the previous one's, only
// when that neighbour exists.
TEST_CASE("audit 11: optimizer swap buffers needed follow the sub-groups in flight", "[audit][memory]") {
  OffloadOptimizerConfig both;
  both.pipeline_read = both.pipeline_write = true;
  CHECK(optimizer_swap_buffers_needed(both, 1) == 4);
  CHECK(optimizer_swap_buffers_needed(both, 2) == 8);
  CHECK(optimizer_swap_buffers_needed(both, 3) == 12);
  CHECK(optimizer_swap_buffers_needed(both, 40) == 12);
  OffloadOptimizerConfig read;
  read.pipeline_read = true;
  CHECK(optimizer_swap_buffers_needed(read, 1) == 4);
  CHECK(optimizer_swap_buffers_needed(read, 5) == 8);
  CHECK(optimizer_swap_buffers_needed(OffloadOptimizerConfig{}, 5) == 4);
  // A valid config zerosim used to refuse: one sub-group, both pipelines, 4 buffers.
  const ModelSpec m = model("gpt2-124m");
  const MemoryReport r = memory_model(m, hardware("dgx-a100-80gb"),
                                      strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme",
      "buffer_count": 4, "pipeline_read": true, "pipeline_write": true}}})",
                                               m, 1));
  CHECK_FALSE(has_problem(r, "buffer_count"));
}

// 13. Smaller items, each from its DeepSpeed function.
TEST_CASE("audit 13: fp32 master, GDS buffers, reduction buckets and the stage-0 bucket", "[audit][memory][plan]") {
  const ModelSpec m = model("gpt2-355m");
  const Hardware h = hardware("dgx-a100-80gb");
  const int64_t p = (parameter_count(m) + 7) / 8;
  auto mem = [&](const std::string& json) { return memory_model(m, h, strategy(json, m, 8)); };
  // stage3.py _create_fp32_partitions: an fp32 model's partition is the master (no second copy).
  CHECK(mem(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})")
            .tier(Tier::gpu)
            .item("fp32_master") == 0);
  CHECK(mem(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": {"stage": 3}})")
            .tier(Tier::gpu)
            .item("fp32_master") == 4 * p);
  // partitioned_param_swapper.py: with aio.use_gds the parameter swap buffers are GPU memory.
  const std::string nvme = R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}, "aio": )";
  const MemoryReport gds = mem(nvme + R"({"use_gds": true}})");
  CHECK(gds.tier(Tier::gpu).item("param_swap_buffers") > 0);
  CHECK(gds.tier(Tier::cpu).item("param_swap_buffers") == 0);
  CHECK(mem(nvme + "{}}").tier(Tier::cpu).item("param_swap_buffers") > 0);
  // stage3.py: the IPG buffer exists only with contiguous_gradients, in the communication dtype.
  const MemoryReport z3 = mem(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "communication_data_type": "fp32", "zero_optimization": {"stage": 3, "reduce_bucket_size": 1e8}})");
  CHECK(z3.tier(Tier::gpu).item("comm_buckets") == 4 * 100000000LL);
  CHECK(mem(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 3, "contiguous_gradients": false}})")
            .tier(Tier::gpu)
            .item("comm_buckets") == 0);
  // engine.py allreduce_gradients: stage 0 buckets are MEMORY_OPT_ALLREDUCE_SIZE, whatever reduce_bucket_size says.
  const Plan p0 = make_plan(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
    "zero_optimization": {"stage": 0, "reduce_bucket_size": 1e6}})", m, 8));
  int64_t buckets = 0;
  for (const Op& op : p0.ops) buckets += op.purpose == Purpose::alloc_allreduce_bucket ? 1 : 0;
  CHECK(buckets == 1);  // 355M parameters fit one 5e8 bucket
  // swap_tensor/optimizer_utils.py: the optimizer swap buffers hold the master dtype.
  const MemoryReport opt16 = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1,
    "bf16": {"enabled": true, "bf16_master_weights_and_grads": true}, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}})", m, 1));
  const MemoryReport opt32 = memory_model(m, h, strategy(R"({"train_micro_batch_size_per_gpu": 1,
    "bf16": {"enabled": true}, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}})", m, 1));
  CHECK(opt16.tier(Tier::cpu).item("opt_swap_buffers") * 2 == opt32.tier(Tier::cpu).item("opt_swap_buffers"));
}

// 8. engine.py _return_mics_optimizer: with mics_shard_size ZeRO-3 partitions within the shard group (zero/mics.py
// MiCS_Init) and all-reduces the gradient partitions across the replicas at the boundary
// (MiCS_Optimizer.allreduce_mics_shard_grads), which refuses CPU offload.
TEST_CASE("audit 8: MiCS partitions within the shard group", "[audit][memory][plan]") {
  const ModelSpec m = model("llama2-13b");
  const Hardware h = hardware("dgx-a100-80gb");
  auto s = [&](const std::string& extra) {
    return strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
      "zero_optimization": {"stage": 3)" + extra + "}}", m, 8, 4);
  };
  auto states = [&](const Strategy& st) {
    const MemoryReport r = memory_model(m, h, st);
    const TierReport& g = r.tier(Tier::gpu);
    return g.item("lp_params") + g.item("lp_grads") + g.item("fp32_master") + g.item("adam_m_v");
  };
  const Strategy plain = s(""), mics = s(R"(, "mics_shard_size": 8)");
  CHECK(partition_world(plain) == 32);
  CHECK(partition_world(mics) == 8);
  CHECK(static_cast<double>(states(plain)) / kGiB == Approx(6.1).epsilon(0.02));
  CHECK(static_cast<double>(states(mics)) / kGiB == Approx(24.3).epsilon(0.02));
  const Plan p = make_plan(m, h, mics);
  bool replica_allreduce = false;
  for (const Op& op : p.ops) {
    if (op.purpose == Purpose::gather_params) CHECK(op.group_ranks == 8);
    if (op.purpose == Purpose::allreduce_grads && op.group_ranks == 4) replica_allreduce = true;
  }
  CHECK(replica_allreduce);
  CHECK(has_problem(memory_model(m, h, s(R"(, "mics_shard_size": 8, "offload_optimizer": {"device": "cpu"})")),
                    "Local sharding has no support for CPU offloading"));
  CHECK(has_problem(memory_model(m, h, s(R"(, "mics_shard_size": 12)")), "does not divide"));
}

// 5. The temporaries of a gradient reduction: stage_1_and_2.py allreduce_bucket flattens the bucket;
// coalesced_collectives.py reduce_scatter_coalesced concatenates it (torch.cat) for stage 3; stage3.py
// partition_grads keeps GPU copies of offloaded partitions and, for NVMe, the master-dtype copies of
// _offload_grad_partition_at_boundary until _swap_out_offload_fp32_gradients.
TEST_CASE("audit 5: gradient reduction temporaries, in fit and in the Plan", "[audit][memory][plan]") {
  const ModelSpec m = model("llama2-7b");
  const Hardware h = hardware("dgx-a100-80gb");
  auto st = [&](const std::string& zero) {
    return strategy(R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}, "zero_optimization": )" +
                        zero + "}",
                    m, 1);
  };
  const int64_t bucket = 500000000;
  CHECK(reduce_temporaries_bytes(m, st(R"({"stage": 2})")) == 2 * bucket);  // the flattened bf16 bucket
  CHECK(reduce_temporaries_bytes(m, st(R"({"stage": 3})")) == 2 * bucket);  // torch.cat
  CHECK(reduce_temporaries_bytes(m, st(R"({"stage": 3, "reduce_scatter": false})")) == 0);  // in place
  CHECK(reduce_temporaries_bytes(m, st(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})")) ==
        2 * bucket + 2 * bucket);
  CHECK(reduce_temporaries_bytes(m, st(R"({"stage": 3, "offload_optimizer": {"device": "nvme",
    "nvme_path": "/nvme"}})")) == 2 * bucket + 2 * bucket + 4 * bucket);  // the audit's +0.9 and +1.9 GiB
  const Strategy s = st(R"({"stage": 3, "offload_optimizer": {"device": "cpu"}})");
  const MemoryReport r = memory_model(m, h, s);
  CHECK(r.tier(Tier::gpu).item("reduce_temporaries") == reduce_temporaries_bytes(m, s));
  const Plan p = make_plan(m, h, s);
  int64_t held = 0, peak_held = 0;
  for (const Op& op : p.ops) {
    if (op.purpose == Purpose::alloc_reduce_temporaries || op.purpose == Purpose::release_reduce_temporaries)
      held += op.mem_delta[0];
    peak_held = std::max(peak_held, held);
  }
  CHECK(peak_held == reduce_temporaries_bytes(m, s));
  CHECK(held == 0);
}
