// Layout: where DeepSpeed puts every parameter's pieces on a rank — its partition, the home tier of its 16-bit
// copy, whether ZeRO-3 keeps it persistent, and the optimizer sub-group that updates it. Computed once from
// (model, strategy, schedule); the memory model, the scheduler and the engine read it, and the Plan carries it.
//   Layout l = make_layout(model, strategy, Schedule::deepspeed);
//   l.params[i].part, l.params[i].lp_home, l.groups[l.params[i].group].tier
//   RankSlice mine = l.slices(rank)[i];  // the elements of parameter i that `rank` holds
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/model.h"
#include "core/strategy.h"

namespace zs::core {

enum class Schedule : uint8_t { deepspeed, dpu, overlap };

// One parameter as DeepSpeed holds it: an untied tensor of the tensor table (wte ≡ tied lm_head), forward order.
struct ParamLayout {
  std::string name;         // "h.3.attn.c_attn.weight"
  int32_t module = 0;       // owning module (module_table index)
  int32_t layer = -1;
  int64_t numel = 0;        // full
  int64_t flat_offset = 0;  // where it starts in the flat model (the numel of the parameters before it)
  // A rank's share as every rank counts it: ceil(numel / world) (stage 3 pads each parameter), its share of the
  // flat partition by cumulative rounding (stages 1-2: the shares sum to ceil(P / world)), numel (stage 0).
  int64_t part = 0;
  bool persistent = false;  // ZeRO-3 persistence thresholds: the full copy stays on the GPU
  Tier lp_home = Tier::gpu; // where the 16-bit partition lives between uses (ZeRO-3 offload_param)
  bool lp_in_cpu_flat = false;  // its sub-group sits in the pinned flat CPU buffer (ZeRO-3 offload_param)
  int32_t group = -1;       // optimizer step unit (Layout::groups)
  // requires_grad. A frozen parameter (a LoRA run's base) has no gradient and no optimizer states: stages 1-2 keep
  // it whole on every rank outside the flat partition (part 0; stage_1_and_2.py builds bit16_groups from trainable
  // parameters only), stage 3 partitions it like any other (zero.Init) but leaves it out of the sub-groups
  // (stage3.py _get_trainable_parameter_groups).
  bool trainable = true;
  int64_t optimizer_part() const { return trainable ? part : 0; }  // the elements the optimizer steps
};

// One optimizer step unit: DeepSpeed's sub-group (stage 3), the whole partition (stages 0-2), or with the overlap
// schedule a layer's share of a sub-group. Parameters [first, last) in parameter order.
struct GroupLayout {
  size_t first = 0, last = 0;
  int64_t elements = 0;   // partition elements updated
  Tier tier = Tier::cpu;  // gpu (no offload, stage 0, Twin-Flow's GPU share), cpu, nvme (states swapped per group)
  int32_t layer = -1;     // the layer when all its parameters share one, else -1
};

// A range [lo, hi) of the flat model (stages 1-2) and the rank whose partition holds it.
struct FlatPiece {
  int64_t rank = 0, lo = 0, hi = 0;
};

// The elements of one parameter that one rank holds.
struct RankSlice {
  int64_t start = 0;             // first element within the parameter
  int64_t count = 0;             // elements (0: the rank holds none of it)
  int64_t partition_offset = 0;  // where they sit in the rank's flat partition buffer
};

struct Layout {
  int stage = 0;
  int64_t world = 1;
  // Where the optimizer states and the 16-bit parameters are offloaded, as DeepSpeed honours the config: stages
  // 1-2 treat offload_optimizer nvme as cpu, offload_param applies to stage 3 only.
  OffloadDevice optimizer_device = OffloadDevice::none, param_device = OffloadDevice::none;
  int64_t flat_partition = 0;      // S = ceil(P / world) over trainable P; stages 1-2: rank r holds [r·S, (r+1)·S) of the flat
                                   // model (the memory model counts S for stage 3's partitioned items too)
  int64_t partition_elements = 0;  // Σ optimizer_part: a rank's partition (stage 3: each parameter padded, ≥ S)
  int64_t frozen_elements = 0;     // a rank's 16-bit elements of frozen parameters (stage 3: partitions; else whole)
  // ZeRO-3 offload_param: the pinned flat CPU buffer of 16-bit partitions (min(partition, max_in_cpu) with nvme),
  // and the pinned swap-out buffer for updated parameters (io-aligned full numels of the largest sub-group; 0 when
  // every sub-group sits in the flat buffer).
  int64_t lp_cpu_flat_elements = 0;
  int64_t lp_reuse_buffer_elements = 0;
  std::vector<ParamLayout> params;
  std::vector<int64_t> sub_groups;  // DeepSpeed's stage-3 sub-groups (_create_fp16_sub_groups): elements of each
  std::vector<GroupLayout> groups;  // the optimizer's step units (sub-groups, cut at layers by the overlap schedule)

  std::vector<RankSlice> slices(int64_t rank) const;  // by parameter: what `rank` holds of each
  // Stages 1-2: the flat range [begin, end) cut where rank partitions meet, each piece with its owner (how
  // DeepSpeed's average_tensor reduces a bucket and how updated partitions are gathered).
  std::vector<FlatPiece> owners(int64_t begin, int64_t end) const;
};

Layout make_layout(const ModelSpec& m, const Strategy& s, Schedule schedule);

// ZeRO-3's mark_persistent_parameters over the parameters' numels in order: which stay whole on every GPU.
std::vector<char> mark_persistent(const std::vector<int64_t>& numels, const ZeroConfig& z);

}  // namespace zs::core
