// Internal to exec/engine*.cpp (engine.cpp: setup, memory, executor, step; engine_ops/_comm/_transfer/_optimizer.cpp:
// the op handlers; engine_checkpoint.cpp): the engine's state — parameters and optimizer groups as the Plan lays them
// out, the buffers that hold them, the stream executor with its hazard tracking, and the per-step bookkeeping.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/memory.h"
#include "core/param_coordinator.h"
#include "exec/cpu_adam.h"
#include "exec/device_kernels.h"
#include "exec/engine.h"
#include "exec/gpt_model.h"
#include "exec/kernels_ref.h"
#include "exec/swapper.h"
#include "exec/thread_pool.h"

namespace zs::exec {

class StaticItems;  // engine_setup.cpp: the memory model's items as the engine allocates them

// One device copy an op's launch makes (K->copy(dst, src, bytes)).
struct DeviceCopy {
  void* dst;
  const void* src;
  int64_t bytes;
};

using core::Status;
using core::Tier;

// Resources the hazard tracker orders work on (read-after-write, write-after-read/write), per index.
enum class Res : uint8_t {
  lp,          // a parameter's lp home (full static copy, or its partition)
  gathered,    // stage 3: a parameter's gathered full copy
  grad_full,   // stage 2/3: a parameter's full gradient of the micro-step
  grad_acc,    // a parameter's accumulated gradient (lp, full or partition)
  fp32_grad,   // a parameter's fp32 gradient (its place in the group's fp32 grads)
  group,       // an optimizer group's fp32 master, m, v
  act,         // activation arenas, by slot (Engine::Impl::slot_block and the rest)
  dres,        // backward residual gradients
  bucket,      // IPG bucket k
  opt_slot,    // optimizer swap buffer slot
  pswap_slot,  // parameter swap buffer slot
  copy_back,   // stage 1/2 pinned lp copy-back buffer / stage 2 grad staging
  scalars,     // the step's gradient norm, overflow flag, multiplier
};
inline uint64_t rid(Res r, int64_t i) { return (static_cast<uint64_t>(r) << 48) | static_cast<uint64_t>(i); }
constexpr int64_t kReserve = int64_t{1} << 40;  // Res::copy_back index of param_swap_reserve (shared by every group)

// Shared by engine*.cpp.
inline core::Error internal(const std::string& what) { return {core::ErrorKind::internal, "engine: " + what}; }
using Keep = std::vector<std::shared_ptr<Buffer>>;  // buffers an op's work holds until it has run
inline unsigned char* bytes_of(void* p) { return static_cast<unsigned char*>(p); }

struct ParamRt {
  std::string name;
  int64_t numel = 0;
  int64_t part = 0;          // this rank's partition: stage 3 ceil(numel / world) (padded); stages 1-2 its share of
                             // the flat partition [rank·S, (rank+1)·S), S = ceil(P / world), maybe 0; stage 0 numel
  int64_t part_start = 0;    // element of the parameter where this rank's partition starts (stage 3: rank · part)
  int64_t flat = 0;          // element offset in the flat model (stage 0-2 full buffers)
  int64_t part_flat = 0;     // element offset of its partition in the flat optimizer-state arrays
  Tier lp_home = Tier::gpu;  // stage 3: where the lp partition lives
  bool persistent = false;   // stage 3: full copy always on the GPU
  int32_t group = -1;
  int64_t group_offset = 0;  // element offset inside its group
  // Homes (static memory).
  void* lp_full = nullptr;   // stage 0-2: into lp_params; stage 3 persistent: into persistent_params
  void* lp_part = nullptr;   // stage 3: GPU or CPU lp partition (nullptr when on NVMe)
  void* grad_acc = nullptr;  // accumulated lp gradient (stage 0/1 full; 2/3 partition; stage 3 offload: CPU)
  std::string swap_name;     // stage 3 NVMe lp partition
  // Per micro-step.
  std::shared_ptr<Buffer> gathered, grad_full;
  int32_t pswap_slot = -1;
  int32_t bucket_op = -1;     // the reduce-scatter op that reduces it this micro-step
  int64_t bucket_offset = 0;  // element offset in that bucket
  bool in_bucket = false;
  int contributions = 0;  // backward contributions so far in this micro-step
  double* sumsq = nullptr;  // its share of the gradient norm² this step (in Impl::norm_parts: the device writes it)
};

struct GroupRt {
  size_t first = 0, last = 0;  // params [first, last)
  int64_t elements = 0;
  Tier tier = Tier::cpu;
  int64_t offset = 0;       // in the flat optimizer-state arrays of its tier
  float* master = nullptr;  // static homes (GPU or CPU); NVMe groups use swap slots
  float* g32 = nullptr;
  void* m = nullptr;
  void* v = nullptr;
  int32_t slot[4] = {-1, -1, -1, -1};  // NVMe: master, m, v, grad
  std::vector<size_t> runs;            // NVMe: its gradient files (indices into Impl::grad_runs), one per bucket run
  int32_t run_slot = -1;               // NVMe: the swap buffer staging the run being delivered
  bool speculative = false;            // overlap: updated before the norm was known
  std::shared_ptr<Buffer> snapshot;    // overlap: master, m, v before the speculative update
};

// A pool of equal buffers carved from one static allocation (DeepSpeed's swap buffers).
struct SlotPool {
  // One allocation per slot, as DeepSpeed's swap buffers are separate pinned tensors: each starts page-aligned,
  // so swaps into and out of it go zero-copy (a slot carved at a 1 KiB-aligned offset would bounce every chunk).
  std::vector<unsigned char*> slots;
  int64_t slot_bytes = 0;
  std::vector<char> busy;
  std::vector<Event> last_use;
  int32_t acquire(std::vector<Event>& waits);
  void release(int32_t s, const Event& e);
  void* ptr(int32_t s) const { return slots[static_cast<size_t>(s)]; }
};

struct Scalars {
  bool ready = false;
  double norm = 0;  // of the scaled gradients
  bool overflow = false;
  float multiplier = 1;  // applied to the fp32 gradients before Adam (1 / combined scale)
  double loss_scale = 1;
};

struct LossScaler {  // DeepSpeed's DynamicLossScaler (fp16/loss_scaler.py)
  bool dynamic = false;
  double scale = 1, min_scale = 1;
  int64_t window = 1000, delayed_shift = 2, cur_hysteresis = 2;
  bool consecutive_hysteresis = false;
  int64_t cur_iter = 0, last_overflow_iter = -1;
  void update(bool overflow);
};

struct Engine::Impl {
  // Inputs.
  core::ModelSpec m;
  core::Hardware hw;
  core::Strategy s;
  Device* dev = nullptr;
  DeviceKernels* K = nullptr;  // dev->kernels(): what device work runs
  Communicator* comm = nullptr;
  EngineOptions o;
  core::Plan plan;
  core::MemoryReport mem;
  core::ActivationBytes act_plan;
  std::optional<GptModel> model;
  DType dt = DType::bf16;
  int64_t lp = 2;
  int stage = 0;
  int64_t ga = 1, L = 0;
  int64_t world = 1, rank = 0;  // the data-parallel group (comm); the Plan's ops are executed as this rank
  int64_t flat_part = 0;        // stages 1-2: S = ceil(P / world), each rank's share of the flat model
  bool mixed = true, ckpt = false, cpu_ckpt = false, opt_offload = false;
  core::OffloadDevice opt_dev = core::OffloadDevice::none, par_dev = core::OffloadDevice::none;
  std::vector<core::TraceStep> trace;
  std::vector<ParamRt> params;
  std::vector<GroupRt> groups;
  std::vector<std::vector<int32_t>> module_params;

  // Static memory, by the memory model's item key.
  MemoryAccount cpu_acct{"cpu", 0};
  MemoryAccount nvme_acct{"nvme", 0};
  // Page-locked host scalars the device writes (outside the Plan, listed in extras): per parameter its share of
  // the gradient norm², and per micro-step the lm_head's token losses [GA][N] (summed on the host after the step).
  MemoryAccount scalars_acct{"engine scalars (host)", int64_t{1} << 40};
  Buffer norm_parts, loss_parts;
  const int32_t* tokens_of(size_t micro) const {
    const Buffer& b = tokens_dev ? tokens_dev : tokens_host;
    return b.as<int32_t>() + static_cast<int64_t>(micro) * 2 * model->tokens();
  }
  std::map<std::string, Buffer> gpu_items, cpu_items;
  std::vector<std::shared_ptr<Buffer>> buckets;  // IPG buckets (comm_buckets), 1 or 2
  int64_t bucket_elems = 0;
  SlotPool opt_slots, pswap_slots;
  void* pswap_reserve = nullptr;   // param_swap_reserve: cast target of NVMe lp partitions
  void* copy_back = nullptr;       // stage 1/2 offload: lp_copy_back (CPU)
  void* grad_accum_cpu = nullptr;  // stage 2 offload, GA > 1: grad_accum (CPU)
  void* staging_gpu = nullptr;     // stage 1/2 offload: offload_staging (GPU)
  std::unique_ptr<Swapper> par_swapper, opt_swapper_owned;
  Swapper* opt_swapper = nullptr;
  std::vector<Buffer> swapper_pools;          // accounting for the swappers' own pools (the memory is the swapper's)
  std::map<std::string, int64_t> nvme_files;  // swapped tensor → bytes on disk (padded), for the NVMe account

  // Per step.
  int64_t step_index = 0;  // optimizer steps taken
  int64_t adam_step = 0;   // Adam's step count (skipped fp16 steps do not count)
  LossScaler scaler;
  std::unique_ptr<CpuAdam> adam;          // β^t of every group (the optimizer's step count)
  std::unique_ptr<ThreadPool> adam_pool;  // CPU Adam's threads
  std::mutex adam_mu;
  int64_t scalars_step = 0;                     // the step adam's scalars are for
  AdamScalars step_adam_scalars(int64_t step);  // advances β^t once per step (DeepSpeed's IncrementStep)
  void adam_update(const AdamBuffers& b, bool on_cpu, int64_t step);
  // Elementwise host work over [0, n) in chunks of 32768 (PyTorch's at::parallel_for grain) on CPU Adam's threads,
  // as DeepSpeed's CPU-side grad.mul_ and fp32 -> lp copy_ run; one caller at a time (the cpu_adam stream, or the
  // host after synchronize()).
  void host_parallel(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
  void host_scale(float* x, float mul, int64_t n);
  Scalars cur, pending;        // this step's scalars; dpu: the previous step's (its gradients are applied now)
  bool pending_grads = false;  // dpu: fp32 gradients of the previous step wait in their buffers
  std::vector<Event> op_event;
  std::vector<std::array<int64_t, 3>> op_ledger;  // measured occupancy when each op was issued
  std::vector<core::TraceEvent> events;
  std::unordered_map<uint64_t, std::pair<Event, std::vector<Event>>> hazards;
  std::vector<int32_t> op_step;                                      // compute ops: index into `trace`
  std::vector<std::vector<int32_t>> grads_alloc_at, grads_ready_at;  // per trace step
  std::chrono::steady_clock::time_point t0;
  std::mutex scalar_mu;
  // The step's token ids [GA][2·N] (per micro-step: tokens, then targets): page-locked host memory, and a device
  // copy on a GPU (uploaded at the start of the step; tokens_ready).
  Buffer tokens_host, tokens_dev;
  Event tokens_ready;
  std::vector<double> micro_loss;
  std::map<int64_t, std::shared_ptr<Buffer>> acts;  // activation slot → arena
  // Activation slots: the keys of `acts` and rid(Res::act, slot). L = layers, l a block.
  //   [0, L)          block l's activations (its arena; a recompute's too)      slot_block(l)
  //   L               the embedding's (GPT-2's dropout mask)                     slot_embedding()
  //   L + 1           the head's and the loss's                                  slot_head()
  //   [L+2, 2L+2)     block l's input checkpoint on the GPU                      slot_checkpoint_gpu(l)
  //   [2L+2, 3L+2)    the same checkpoint in pinned host memory                  slot_checkpoint_cpu(l)
  //   [3L+2, 4L+2)    a checkpointed block's forward scratch                     slot_forward_scratch(l)
  //   4L + 2          the last block's output until the head's arena exists      slot_head_input()
  // Slots 0 .. L+1 are the Plan's activation_slot of the activation tensors (act_layer).
  int64_t slot_block(int64_t l) const { return l; }
  int64_t slot_embedding() const { return L; }
  int64_t slot_head() const { return L + 1; }
  int64_t slot_checkpoint_gpu(int64_t l) const { return L + 2 + l; }
  int64_t slot_checkpoint_cpu(int64_t l) const { return 2 * L + 2 + l; }
  int64_t slot_forward_scratch(int64_t l) const { return 3 * L + 2 + l; }
  int64_t slot_head_input() const { return 4 * L + 2; }
  std::array<std::shared_ptr<Buffer>, 2> dres{};
  std::shared_ptr<Buffer> transient_fp32;  // stage 3 GPU Adam: a group's fp32 grads
  std::shared_ptr<Buffer> reduce_temporaries;  // DeepSpeed's gradient reduction temporaries, held as the Plan says
  std::shared_ptr<Buffer> allreduce_buf;   // stage 0: the bucket of the running all-reduce
  int64_t bucket_turn = 0;
  bool head_release_pending = false;
  bool layer0_release_pending = false;
  bool spare_dres = false;    // residual gradients live in each block arena's unused dropout-mask bytes
  bool seen_compute = false;  // dpu: Adam ops before the first compute op are the prologue
  bool norm_issued = false;   // overlap: Adam ops before the norm are speculative
  // Buckets: per micro-step and parameter, the reduce op that reduces its gradient and its element offset in the
  // bucket; per reduce op, which bucket (overlap_comm double-buffers); NVMe gradient files: the op that writes a
  // group's file (its last run).
  std::vector<std::vector<std::pair<int32_t, int64_t>>> bucket_of;
  std::vector<int32_t> bucket_k;
  // NVMe groups' fp32 gradients are written per bucket run (the params of one group one reduction delivers), each
  // its own file, and read back together into one swap buffer for the group's Adam.
  struct GradRun {
    size_t group = 0, first = 0, last = 0;
    int64_t offset = 0, elements = 0;  // in the group
    std::string name;
  };
  std::vector<GradRun> grad_runs;
  std::vector<int32_t> run_of_first;  // param → the run it starts, -1
  std::vector<std::string> notes;
  std::map<std::string, int64_t> extras;  // engine allocations outside the Plan: peak bytes by name
  MeasuredMemory measured_static;
  core::Trace trace_last;

  // engine.cpp
  Status setup();
  Status check_supported();
  Status build_model();
  Status place_params();  // ParamRt and GroupRt from the Plan's layout
  void make_optimizer();
  Status map_compute_ops();
  Status map_buckets_and_runs();
  Status allocate_static();  // the memory model's steady-state items (engine_setup.cpp)
  Status allocate_host_scalars();
  Status allocate_gpu_static(StaticItems& items);
  Status allocate_cpu_static(StaticItems& items);
  Status init_params();
  Status init_states();
  Result<StepResult> step(DataLoader& data);
  Stream& stream(core::Stream s);
  // Host work of an op (CPU Adam, NVMe swaps, host casts, the norm) on its stream, after the Plan's dependencies and
  // the hazards on what it reads and writes.
  Event issue(const core::Op& op, std::vector<uint64_t> reads, std::vector<uint64_t> writes,
              std::function<Status()> work, std::vector<Event> waits = {});
  // Device work of an op (Device::launch: kernels, copies, collectives through K on the given stream), ordered
  // the same way. sync_waits: its launch reads on the host what earlier device work wrote.
  Event launch(const core::Op& op, std::vector<uint64_t> reads, std::vector<uint64_t> writes,
               std::function<Status(void* stream)> work, std::vector<Event> waits = {}, bool sync_waits = false);
  // Orders an op (the shared part of issue and launch): waits from deps and hazards, the trace event, the hazards
  // it leaves; `submit` queues the work after `waits`.
  Event order(const core::Op& op, std::vector<uint64_t>& reads, std::vector<uint64_t>& writes,
              std::vector<Event>& waits, const std::function<Event(Stream&, const std::vector<Event>&)>& submit);
  Status compute_scalars(Scalars& sc);
  void note(const std::string& n);
  Result<Buffer> alloc_gpu(int64_t bytes, const std::string& name);
  Result<Buffer> alloc_cpu(int64_t bytes, bool pinned, const std::string& name);
  void extra(const std::string& name, int64_t bytes);
  Status swap_out(Swapper& sw, const std::string& name, const void* data, int64_t bytes);
  Status swap_in(Swapper& sw, const std::string& name, void* data, int64_t bytes);
  // Several tensors at once, as DeepSpeed's swappers issue a group's reads (writes) on one aio handle and then
  // wait for all of them: every swap is submitted before the first wait. The first error, after all have ended.
  struct SwapIo {
    std::string name;
    void* data;
    int64_t bytes;
  };
  Status swap_in_all(Swapper& sw, const std::vector<SwapIo>& ios);
  Status reserve_nvme(const std::string& name, int64_t bytes);
  Status swap_out_all(Swapper& sw, const std::vector<SwapIo>& ios);
  // Zeros `bytes` of any memory (device or host) now, outside stream order (initialisation).
  Status zero_sync(void* dst, int64_t bytes);
  int64_t padded(int64_t bytes) const { return (bytes + 4095) / 4096 * 4096; }
  // Elements of a parameter's partition that hold values (stage 3 pads the last ranks' partitions with zeros).
  int64_t valid_part(const ParamRt& r) const { return std::clamp<int64_t>(r.numel - r.part_start, 0, r.part); }
  // Elements a parameter's gradient takes in an IPG bucket: stage 3 pads it to world · part for the reduce-scatter.
  int64_t bucket_numel(const ParamRt& r) const { return stage == 3 ? world * r.part : r.numel; }

  // engine_ops.cpp: run_op dispatches on op.purpose (core::Purpose), one handler each.
  Status run_op(const core::Op& op);
  Status op_compute(const core::Op& op);
  Status release_activations(const core::Op& op);
  Status release_params(const core::Op& op);  // ZeRO-3 release_sub_module
  Status release_grads(const core::Op& op);   // completed gradients into the IPG bucket, their buffers freed
  Status alloc_allreduce_bucket(const core::Op& op);
  Status release_allreduce_bucket(const core::Op& op);
  Status take_transient(const core::Op& op, const char* what, std::shared_ptr<Buffer>& slot);
  Status give_back_transient(const core::Op& op, std::shared_ptr<Buffer>& slot, int64_t written);
  Status alloc_reduce_temporaries(const core::Op& op);
  Status release_reduce_temporaries(const core::Op& op);
  Status alloc_fp32_grads(const core::Op& op);  // stage 3 GPU Adam: a group's transient fp32 gradients
  Status release_fp32_grads(const core::Op& op);
  // engine_comm.cpp
  Status gather_params(const core::Op& op);             // ZeRO-3 fetch: partitions → gathered copies
  Status gather_persistent_params(const core::Op& op);  // ZeRO-3 _post_step
  Status gather_updated_params(const core::Op& op);     // stages 1-2: the updated flat partitions
  Status op_reduce(const core::Op& op);                 // reduce_grads
  Status allreduce_grads(const core::Op& op);           // a bucket: stage 0's buffered all-reduce
  Status grad_norm(const core::Op& op);
  // engine_transfer.cpp
  Status checkpoint_to_host(const core::Op& op);
  Status checkpoint_from_host(const core::Op& op);
  Status move_checkpoint(const core::Op& op, bool to_host);
  Status read_params_from_nvme(const core::Op& op);  // stage 3 fetch: NVMe → parameter swap buffer
  Status fetch_params_to_gpu(const core::Op& op);    // stage 3 fetch: host partition → gathered copy
  Status move_grad_partitions(const core::Op& op);   // lp gradients between a bucket and host memory
  Status write_grad_run(const core::Op& op);         // an NVMe group's staged fp32 gradients to their file
  Status fp32_grads_to_host(const core::Op& op);     // the boundary's gradients, cast to fp32 on the way
  Status swap_in_state(const core::Op& op);   // one of a group's master, m, v, fp32 gradients
  Status swap_out_state(const core::Op& op);
  Status upload_updated_params(const core::Op& op);
  Status updated_params_to_host(const core::Op& op);
  Status write_updated_params_to_nvme(const core::Op& op);
  Status op_adam(const core::Op& op);
  Status op_cast(const core::Op& op);
  Status finish_overlap();
  Status write_lp_from_master(size_t g);  // every lp home of a group's params from its fp32 master (after the step)

  // Helpers.
  core::TensorKind kind_of(const core::Op& op) const;
  std::pair<size_t, size_t> param_range(const core::Op& op) const;
  std::pair<size_t, size_t> group_range(const core::Op& op) const;  // groups covered by an optimizer op
  Result<size_t> one_group(const core::Op& op) const;               // the one group an optimizer transfer covers
  struct StateSwap {
    size_t group = 0;
    int slot = 0;  // GroupRt::slot index: master, m, v, fp32 gradients
    std::string file;
    int64_t bytes = 0;
  };
  Result<StateSwap> state_swap(const core::Op& op) const;
  int64_t act_layer(const core::Op& op) const;  // activation tensor → layer, L (embedding), L+1 (head)
  const void* lp_full_ptr(size_t p) const;
  Result<std::shared_ptr<Buffer>> ensure_act(int64_t idx, int64_t bytes, const std::string& name);
  void free_act(int64_t idx);
};

}  // namespace zs::exec
