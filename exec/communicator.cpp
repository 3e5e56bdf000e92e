// The single-rank communicator: one rank's collectives are copies (in place: nothing to do). An average over
// one rank divides by 1, which is exact, so results equal the sum bit for bit.
#include "exec/communicator.h"

#include <cstring>

namespace zs::exec {
namespace {

class SingleRank : public Communicator {
 public:
  int rank() const override { return 0; }
  int world() const override { return 1; }
  std::string name() const override { return "single"; }

  Status all_gather(void* recv, const void* send, int64_t count, DType t, const CollectiveCall&) override {
    if (recv != send && count > 0) std::memmove(recv, send, static_cast<size_t>(count * dtype_bytes(t)));
    return {};
  }
  Status reduce_scatter(void* recv, const void* send, int64_t count, DType t, ReduceOp,
                        const CollectiveCall&) override {
    if (recv != send && count > 0) std::memmove(recv, send, static_cast<size_t>(count * dtype_bytes(t)));
    return {};
  }
  Status all_reduce(void*, int64_t, DType, ReduceOp, const CollectiveCall&) override { return {}; }
  Status all_reduce_f64(double*, int64_t, ReduceOp, const CollectiveCall&) override { return {}; }
  Status broadcast(void*, int64_t, int, const CollectiveCall&) override { return {}; }
  Status barrier(const CollectiveCall&) override { return {}; }
};

}  // namespace

std::unique_ptr<Communicator> make_single_rank_communicator() { return std::make_unique<SingleRank>(); }

}  // namespace zs::exec
