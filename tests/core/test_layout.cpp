// The layout (core/layout.h): DeepSpeed's partitions, ZeRO-3 persistence and parameter swapping, sub-groups. Each
// rule is DeepSpeed v0.19's:
//   stage 1-2 flat partitions: runtime/zero/stage_1_and_2.py, DeepSpeedZeroOptimizer.get_data_parallel_partitions
//     (the flat buffer padded to a multiple of world, cut into world equal slices);
//   stage 3 per-parameter partitions: runtime/zero/partition_parameters.py, _partition_param (ceil(numel / world)
//     per rank, the last padded);
//   persistence: runtime/zero/parameter_offload.py, DeepSpeedZeRoOffload.mark_persistent_parameters;
//   NVMe homes: runtime/zero/stage3.py, _create_param_groups_fp16_flat_cpu_memory (max_in_cpu first) and
//     swap_tensor/utils.py MIN_AIO_BYTES;
//   sub-groups: stage3.py, _create_fp16_sub_groups; Twin-Flow: stage3.py, subgroup_to_device.
#include <numeric>

#include "core/layout.h"
#include "tests/core/test_plan_helpers.h"

using namespace plan_test;

namespace {

int64_t total_numel(const Layout& l) {
  int64_t n = 0;
  for (const auto& p : l.params) n += p.numel;
  return n;
}

}  // namespace

TEST_CASE("stages 1-2: the ranks' slices tile every parameter exactly once", "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  for (int64_t world : {1, 3, 8}) {
    for (int stage : {1, 2}) {
      const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": )" +
                                      std::to_string(stage) + "}}",
                                  m, world);
      const Layout l = make_layout(m, s, Schedule::deepspeed);
      INFO("world " << world << ", stage " << stage);
      const int64_t P = total_numel(l);
      CHECK(l.flat_partition == (P + world - 1) / world);
      std::vector<int64_t> covered(l.params.size(), 0);
      for (int64_t r = 0; r < world; ++r) {
        const auto mine = l.slices(r);
        int64_t held = 0, expect_offset = 0;
        for (size_t i = 0; i < l.params.size(); ++i) {
          const RankSlice& sl = mine[i];
          covered[i] += sl.count;
          if (sl.count > 0) {
            // The slice is the parameter's overlap with [r·S, (r+1)·S) of the flat model.
            CHECK(l.params[i].flat_offset + sl.start >= r * l.flat_partition);
            CHECK(l.params[i].flat_offset + sl.start + sl.count <= (r + 1) * l.flat_partition);
          }
          CHECK(sl.partition_offset == expect_offset);
          expect_offset += sl.count;
          held += sl.count;
        }
        CHECK(held == std::min(l.flat_partition, std::max<int64_t>(0, P - r * l.flat_partition)));
      }
      for (size_t i = 0; i < l.params.size(); ++i) CHECK(covered[i] == l.params[i].numel);
      // The shares every rank counts (the Plan's representative rank) sum to S.
      int64_t shares = 0;
      for (const auto& p : l.params) shares += p.part;
      CHECK(shares == l.flat_partition);
      CHECK(l.partition_elements == l.flat_partition);
    }
  }
}

TEST_CASE("stage 3 pads every parameter to world x ceil(numel / world)", "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3}})", m, 3);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  int64_t padded = 0;
  for (const auto& p : l.params) {
    CHECK(p.part == (p.numel + 2) / 3);
    padded += p.part;
  }
  CHECK(l.partition_elements == padded);
  CHECK(l.partition_elements >= l.flat_partition);
  const auto r2 = l.slices(2);
  CHECK(r2[5].start == 2 * l.params[5].part);
  CHECK(r2[5].count == l.params[5].part);
  CHECK(r2[1].partition_offset == l.params[0].part);
}

TEST_CASE("ZeRO-3 persistence follows both thresholds in parameter order", "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  // 768-element biases and norms are under the per-parameter threshold; the model-wide cap admits the first few.
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "stage3_param_persistence_threshold": 1000, "stage3_model_persistence_threshold": 3000}})",
                              m, 1);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  int64_t persistent = 0, count = 0;
  for (const auto& p : l.params)
    if (p.persistent) {
      CHECK(p.numel <= 1000);
      persistent += p.numel;
      ++count;
    }
  CHECK(persistent <= 3000);
  CHECK(count == 3);  // 3 x 768 = 2304; a fourth would make 3072 > 3000
  const Strategy none = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2}})", m, 1);
  for (const auto& p : make_layout(m, none, Schedule::deepspeed).params) CHECK_FALSE(p.persistent);
}

// stage3.py _create_param_groups_fp16_flat_cpu_memory sizes one flat CPU buffer of min(partition, max_in_cpu);
// _create_fp16_partitions_with_defragmentation places a whole sub-group in it only if flat_offset + its elements
// fit, so max_in_cpu is counted in sub-groups, not parameters. The rest stay where zero.Init's _partition_param put
// them: NVMe when swappable (partition bytes >= max(MIN_AIO_BYTES, aio block_size)), else CPU memory.
TEST_CASE("offload_param nvme: whole sub-groups within max_in_cpu stay in CPU, the rest swap if large enough",
          "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "sub_group_size": 20000000,
      "offload_param": {"device": "nvme", "nvme_path": "/tmp", "max_in_cpu": 40000000}}})",
                              m, 1);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  CHECK(l.param_device == OffloadDevice::nvme);
  REQUIRE(l.sub_groups.size() >= 4);
  CHECK(l.lp_cpu_flat_elements == 40000000);
  // Sub-groups in order: in the flat buffer while the running total stays within max_in_cpu.
  int64_t end = 0;
  size_t in_flat_groups = 0;
  for (int64_t g : l.sub_groups) {
    end += g;
    if (end <= 40000000) ++in_flat_groups;
  }
  CHECK(in_flat_groups >= 1);
  CHECK(in_flat_groups < l.sub_groups.size());
  int64_t cum = 0, flat_end = 0;
  for (size_t g = 0; g < in_flat_groups; ++g) flat_end += l.sub_groups[g];
  bool any_nvme = false, any_small_outside = false;
  for (const auto& p : l.params) {
    cum += p.part;
    const bool in_flat = cum <= flat_end;
    const bool swappable = p.part * 2 >= std::max<int64_t>(1 << 20, s.aio.block_size);  // fp16: 2 B
    INFO(p.name);
    CHECK(p.lp_in_cpu_flat == in_flat);
    CHECK((p.lp_home == Tier::nvme) == (!in_flat && swappable));
    any_nvme = any_nvme || p.lp_home == Tier::nvme;
    any_small_outside = any_small_outside || (!in_flat && !swappable);
  }
  CHECK(any_nvme);
  CHECK(any_small_outside);
  // Some sub-group is outside the flat buffer: the swap-out buffer holds the largest sub-group's parameters at
  // their full size, each io-aligned (reserve_partitioned_swap_space over t.ds_numel).
  CHECK(l.lp_reuse_buffer_elements > 0);
  // A max_in_cpu of the whole partition: every sub-group in the flat buffer, no swap-out buffer.
  const Strategy all_cpu = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "offload_param": {"device": "nvme", "nvme_path": "/tmp", "max_in_cpu": 1e9}}})",
                                    m, 1);
  const Layout a = make_layout(m, all_cpu, Schedule::deepspeed);
  CHECK(a.lp_reuse_buffer_elements == 0);
  for (const auto& p : a.params) CHECK(p.lp_home == Tier::cpu);
  const Strategy cpu = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "offload_param": {"device": "cpu"}}})",
                                m, 1);
  for (const auto& p : make_layout(m, cpu, Schedule::deepspeed).params) CHECK(p.lp_home == Tier::cpu);
}

TEST_CASE("sub-groups close at sub_group_size; the overlap schedule cuts them at layers", "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "sub_group_size": 20000000, "offload_optimizer": {"device": "cpu"}}})",
                              m, 1);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  REQUIRE(l.sub_groups.size() >= 2);
  CHECK(std::accumulate(l.sub_groups.begin(), l.sub_groups.end(), int64_t{0}) == l.partition_elements);
  for (size_t g = 0; g + 1 < l.sub_groups.size(); ++g) CHECK(l.sub_groups[g] >= 20000000);
  REQUIRE(l.groups.size() == l.sub_groups.size());
  for (size_t g = 0; g < l.groups.size(); ++g) {
    CHECK(l.groups[g].elements == l.sub_groups[g]);
    CHECK(l.groups[g].tier == Tier::cpu);
    for (size_t i = l.groups[g].first; i < l.groups[g].last; ++i) CHECK(l.params[i].group == static_cast<int32_t>(g));
  }
  const Layout overlap = make_layout(m, s, Schedule::overlap);
  CHECK(overlap.groups.size() > l.groups.size());
  for (const auto& g : overlap.groups)
    for (size_t i = g.first + 1; i < g.last; ++i) CHECK(overlap.params[i].layer == overlap.params[g.first].layer);
}

TEST_CASE("Twin-Flow: the first int((1 - ratio) x n) sub-groups step on the GPU", "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "sub_group_size": 20000000, "offload_optimizer": {"device": "cpu", "ratio": 0.5}}})",
                              m, 1);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  const auto on_gpu = static_cast<size_t>(0.5 * static_cast<double>(l.sub_groups.size()));
  REQUIRE(on_gpu >= 1);
  for (size_t g = 0; g < l.groups.size(); ++g) CHECK(l.groups[g].tier == (g < on_gpu ? Tier::gpu : Tier::cpu));
}

TEST_CASE("stages 1-2 treat offload_optimizer nvme as cpu", "[layout]") {
  const ModelSpec m = model("gpt2-124m");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/tmp"}}})",
                              m, 2);
  const Layout l = make_layout(m, s, Schedule::deepspeed);
  CHECK(l.optimizer_device == OffloadDevice::cpu);
  REQUIRE(l.groups.size() == 1);
  CHECK(l.groups[0].tier == Tier::cpu);
  const auto owners = l.owners(0, total_numel(l));
  REQUIRE(owners.size() == 2);
  CHECK(owners[0].hi == l.flat_partition);
  CHECK(owners[1].lo == l.flat_partition);
}

TEST_CASE("the Plan carries the layout its ops use", "[layout][plan]") {
  const ModelSpec m = model("gpt2-124m");
  const Hardware hw = hardware("dgx-a100-80gb");
  const Strategy s = strategy(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 3,
      "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}})",
                              m, 8);
  const Plan p = make_plan(m, hw, s);
  const size_t np = p.layout.params.size();
  REQUIRE(np > 0);
  for (size_t i = 0; i < np; ++i) {
    const PlanTensor& lp = p.tensors[i];
    CHECK(lp.name == p.layout.params[i].name);
    CHECK(lp.home == (p.layout.params[i].persistent ? Tier::gpu : p.layout.params[i].lp_home));
    CHECK(p.param_of(static_cast<int32_t>(2 * np + i)) == i);
  }
  CHECK(p.activation_slot(static_cast<int32_t>(6 * np)) == 0);
  const std::string json = plan_to_json(p, false);
  CHECK(json.find("\"layout\":{\"stage\":3,\"world\":8") != std::string::npos);
}
