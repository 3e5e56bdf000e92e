// NCCL communicator (nccl_communicator.h). One pattern for every call: check the communicator is healthy, enqueue
// (a non-blocking communicator may answer ncclInProgress), then poll until the op's event completes, NCCL reports
// an asynchronous error, or the deadline passes — then ncclCommAbort, so the other ranks' calls fail too.
#include "exec/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "exec/cuda/cuda_check.h"

namespace zs::exec {
namespace {

using Clock = std::chrono::steady_clock;

core::Error nccl_error(ncclResult_t r, const std::string& what, const char* file, int line) {
  return core::Error{core::ErrorKind::io, "NCCL error " + std::to_string(static_cast<int>(r)) + " (" +
                                              ncclGetErrorString(r) + ") in " + what + " at " + file + ":" +
                                              std::to_string(line)};
}
#define ZS_NCCL_TRY(expr)                                          \
  do {                                                             \
    const ncclResult_t zs_nccl_r_ = (expr);                        \
    if (zs_nccl_r_ != ncclSuccess && zs_nccl_r_ != ncclInProgress) \
      return nccl_error(zs_nccl_r_, #expr, __FILE__, __LINE__);    \
  } while (0)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::fp16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp32:
      break;
  }
  return ncclFloat32;
}
ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::avg ? ncclAvg : ncclSum; }

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const NcclOptions& o, ncclComm_t comm, void* scratch) : o_(o), comm_(comm), scratch_(scratch) {}
  ~NcclCommunicator() override {
    (void)cudaSetDevice(o_.cuda_device);
    if (comm_ && !aborted_) {
      // Flush what was issued (with the deadline), then release; abort if the flush fails or hangs.
      const ncclResult_t fr = ncclCommFinalize(comm_);
      const Status f = fr == ncclSuccess || fr == ncclInProgress
                           ? settle("nccl finalize")
                           : Status(nccl_error(fr, "ncclCommFinalize", __FILE__, __LINE__));
      if (f.ok())
        (void)ncclCommDestroy(comm_);
      else if (!aborted_)
        (void)ncclCommAbort(comm_);
    }
    if (scratch_) (void)cudaFree(scratch_);
  }

  int rank() const override { return o_.rank; }
  int world() const override { return o_.world; }
  std::string name() const override { return "nccl"; }

  Status all_gather(void* recv, const void* send, int64_t count, DType t, const CollectiveCall& c) override {
    return run("all_gather", c, [&](cudaStream_t s) {
      return ncclAllGather(send, recv, static_cast<size_t>(count), nccl_type(t), comm_, s);
    });
  }
  Status reduce_scatter(void* recv, const void* send, int64_t count, DType t, ReduceOp op,
                        const CollectiveCall& c) override {
    return run("reduce_scatter", c, [&](cudaStream_t s) {
      return ncclReduceScatter(send, recv, static_cast<size_t>(count), nccl_type(t), nccl_op(op), comm_, s);
    });
  }
  Status all_reduce(void* buf, int64_t count, DType t, ReduceOp op, const CollectiveCall& c) override {
    return run("all_reduce", c, [&](cudaStream_t s) {
      return ncclAllReduce(buf, buf, static_cast<size_t>(count), nccl_type(t), nccl_op(op), comm_, s);
    });
  }
  // The engine's doubles (norm partials, overflow flags) may live in host memory: staged through device scratch.
  Status all_reduce_f64(double* buf, int64_t count, ReduceOp op, const CollectiveCall& c) override {
    if (count <= 0) return {};
    cudaPointerAttributes attr{};
    const bool on_device = cudaPointerGetAttributes(&attr, buf) == cudaSuccess && attr.type == cudaMemoryTypeDevice;
    (void)cudaGetLastError();
    if (on_device)
      return run("all_reduce_f64", c, [&](cudaStream_t s) {
        return ncclAllReduce(buf, buf, static_cast<size_t>(count), ncclFloat64, nccl_op(op), comm_, s);
      });
    if (count > kScratchDoubles)
      return core::bad_input("nccl all_reduce_f64 '" + c.op_name + "': " + std::to_string(count) +
                             " host doubles (at most " + std::to_string(kScratchDoubles) + "; pass device memory)");
    const auto s = static_cast<cudaStream_t>(c.stream);
    const size_t bytes = sizeof(double) * static_cast<size_t>(count);
    ZS_CUDA_TRY(cudaMemcpyAsync(scratch_, buf, bytes, cudaMemcpyHostToDevice, s));
    ZS_TRY(run(
        "all_reduce_f64", c,
        [&](cudaStream_t st) {
          return ncclAllReduce(scratch_, scratch_, static_cast<size_t>(count), ncclFloat64, nccl_op(op), comm_, st);
        },
        /*force_wait=*/true));
    ZS_CUDA_TRY(cudaMemcpyAsync(buf, scratch_, bytes, cudaMemcpyDeviceToHost, s));
    ZS_CUDA_TRY(cudaStreamSynchronize(s));
    return {};
  }
  Status broadcast(void* buf, int64_t bytes, int root, const CollectiveCall& c) override {
    return run("broadcast", c, [&](cudaStream_t s) {
      return ncclBroadcast(buf, buf, static_cast<size_t>(bytes), ncclUint8, root, comm_, s);
    });
  }
  // A one-float all-reduce on the device scratch, always waited for.
  Status barrier(const CollectiveCall& c) override {
    return run(
        "barrier", c,
        [&](cudaStream_t s) { return ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, s); },
        /*force_wait=*/true);
  }

  static constexpr int64_t kScratchDoubles = 4096;

 private:
  std::string where(const char* op, const CollectiveCall& c) const {
    return std::string("nccl ") + op + (c.op_name.empty() ? "" : " '" + c.op_name + "'") + " on rank " +
           std::to_string(o_.rank) + " of " + std::to_string(o_.world);
  }

  // Waits until NCCL has no operation in progress on the communicator (init, enqueue, finalize).
  Status settle(const std::string& what) {
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.comm.timeout_s);
    for (;;) {
      ncclResult_t st = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &st);
      if (r != ncclSuccess) return nccl_error(r, what + ": ncclCommGetAsyncError", __FILE__, __LINE__);
      if (st == ncclSuccess) return {};
      if (st != ncclInProgress) return fail_abort(what + ": " + ncclGetErrorString(st) + last_error());
      if (Clock::now() > deadline)
        return fail_abort(what + ": not complete after " + secs() + "; communicator aborted");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  template <class F>
  Status run(const char* op, const CollectiveCall& c, F&& enqueue, bool force_wait = false) {
    const std::string w = where(op, c);
    if (aborted_) return core::io_error(w + ": the communicator was aborted by an earlier failure");
    ZS_CUDA_TRY(cudaSetDevice(o_.cuda_device));
    ZS_TRY(settle(w + " (an earlier operation)"));
    const auto s = static_cast<cudaStream_t>(c.stream);
    const ncclResult_t r = enqueue(s);
    if (r != ncclSuccess && r != ncclInProgress) return fail_abort(w + ": " + ncclGetErrorString(r));
    ZS_TRY(settle(w + " (enqueue)"));
    if (!o_.wait_for_completion && !force_wait) return {};
    cudaEvent_t ev = nullptr;
    ZS_CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    struct Destroy {
      cudaEvent_t e;
      ~Destroy() { (void)cudaEventDestroy(e); }
    } destroy{ev};
    ZS_CUDA_TRY(cudaEventRecord(ev, s));
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.comm.timeout_s);
    for (;;) {
      const cudaError_t q = cudaEventQuery(ev);
      if (q == cudaSuccess) return {};
      if (q != cudaErrorNotReady) return fail_abort(w + ": " + cudaGetErrorString(q));
      ncclResult_t st = ncclSuccess;
      (void)ncclCommGetAsyncError(comm_, &st);
      if (st != ncclSuccess && st != ncclInProgress)
        return fail_abort(w + ": " + ncclGetErrorString(st) + last_error());
      if (Clock::now() > deadline)
        return fail_abort(w + ": not complete after " + secs() + " (a rank missing or stuck?); communicator aborted");
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  std::string last_error() const {
    const char* e = ncclGetLastError(comm_);
    return e && *e ? std::string(" — ") + e : std::string();
  }
  Status fail_abort(const std::string& msg) {
    if (!aborted_) {
      aborted_ = true;
      (void)ncclCommAbort(comm_);
    }
    return core::io_error(msg);
  }
  std::string secs() const {
    char b[32];
    std::snprintf(b, sizeof b, "%.0f s", o_.comm.timeout_s);
    return b;
  }

  NcclOptions o_;
  ncclComm_t comm_ = nullptr;
  void* scratch_ = nullptr;  // kScratchDoubles doubles of device memory (barrier, host all_reduce_f64)
  bool aborted_ = false;
};

}  // namespace

core::Result<NcclUniqueIdBytes> nccl_unique_id() {
  ncclUniqueId id;
  ZS_NCCL_TRY(ncclGetUniqueId(&id));
  NcclUniqueIdBytes b{};
  static_assert(sizeof(id.internal) == std::tuple_size_v<NcclUniqueIdBytes>);
  std::memcpy(b.data(), id.internal, b.size());
  return b;
}

core::Result<std::unique_ptr<Communicator>> make_nccl_communicator(const NcclOptions& o, const NcclUniqueIdBytes& idb) {
  if (o.world < 1 || o.rank < 0 || o.rank >= o.world)
    return core::bad_input("nccl: rank " + std::to_string(o.rank) + " of world " + std::to_string(o.world));
  ZS_CUDA_TRY(cudaSetDevice(o.cuda_device));
  void* scratch = nullptr;
  ZS_CUDA_TRY(cudaMalloc(&scratch, sizeof(double) * NcclCommunicator::kScratchDoubles));
  ncclUniqueId id;
  std::memcpy(id.internal, idb.data(), idb.size());
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that init and every call can be abandoned at the deadline
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, o.world, id, o.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    (void)cudaFree(scratch);
    return nccl_error(r,
                      "ncclCommInitRankConfig (rank " + std::to_string(o.rank) + " of " + std::to_string(o.world) + ")",
                      __FILE__, __LINE__);
  }
  auto c = std::make_unique<NcclCommunicator>(o, comm, scratch);
  // The constructor owns comm and scratch from here; a failed settle aborts the communicator.
  CollectiveCall init{.op_name = "init"};
  ZS_TRY(c->barrier(init));
  return std::unique_ptr<Communicator>(std::move(c));
}

core::Result<std::unique_ptr<Communicator>> make_nccl_communicator(
    const NcclOptions& o, const std::function<core::Status(NcclUniqueIdBytes& id)>& broadcast_id) {
  NcclUniqueIdBytes id{};
  if (o.rank == 0) {
    auto fresh = nccl_unique_id();
    if (!fresh) return fresh.error();
    id = *fresh;
  }
  ZS_TRY(broadcast_id(id));
  return make_nccl_communicator(o, id);
}

}  // namespace zs::exec
