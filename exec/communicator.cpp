// The single-rank communicator: one rank's collectives are copies (in place: nothing to do). An average over
// one rank divides by 1, which is exact, so results equal the sum bit for bit. The thread group (several ranks in
// one process) and the rank-order reduction every multi-rank communicator uses.
#include "exec/communicator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>

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

template <class T>
void reduce_in_order(T* out, const std::vector<const T*>& in, int64_t n, bool avg) {
  const float w = static_cast<float>(in.size());
  for (int64_t i = 0; i < n; ++i) {
    float acc = 0;
    for (size_t q = 0; q < in.size(); ++q) {
      float x = to_f32(in[q][i]);
      if (avg) x = round_to<T>(x / w);
      acc = q == 0 ? x : round_to<T>(acc + x);
    }
    out[i] = from_f32<T>(acc);
  }
}

// Ranks as threads: a two-phase rendezvous per call (all post their buffer; each reads what it needs; all leave),
// so no rank writes a buffer another may still read.
struct Hub {
  std::mutex mu;
  std::condition_variable cv;
  int world = 1;
  double timeout_s = 300;
  int64_t gen = 0;  // rounds completed
  int arrived = 0, left = 0;
  bool draining = false;  // everyone arrived: the round's buffers are being read
  bool broken = false;
  std::vector<const void*> post;
  std::vector<char> here;
};

class ThreadRank : public Communicator {
 public:
  ThreadRank(std::shared_ptr<Hub> h, int rank) : h_(std::move(h)), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return h_->world; }
  std::string name() const override { return "threads"; }

  Status all_gather(void* recv, const void* send, int64_t count, DType t, const CollectiveCall& c) override {
    const int64_t b = count * dtype_bytes(t);
    auto* r = static_cast<unsigned char*>(recv);
    return exchange(send, c, "all_gather", [&](const std::vector<const void*>& p) {
      for (int q = 0; q < h_->world; ++q)
        if (b > 0 && r + q * b != p[static_cast<size_t>(q)]) std::memcpy(r + q * b, p[static_cast<size_t>(q)], b);
    });
  }
  Status reduce_scatter(void* recv, const void* send, int64_t count, DType t, ReduceOp op,
                        const CollectiveCall& c) override {
    const int64_t b = count * dtype_bytes(t);
    std::vector<unsigned char> out(static_cast<size_t>(b));
    ZS_TRY(exchange(send, c, "reduce_scatter", [&](const std::vector<const void*>& p) {
      std::vector<const void*> in;
      for (const void* x : p) in.push_back(static_cast<const unsigned char*>(x) + rank_ * b);
      reduce_rank_order(t, out.data(), in, count, op);
    }));
    if (b > 0) std::memcpy(recv, out.data(), static_cast<size_t>(b));
    return {};
  }
  Status all_reduce(void* buf, int64_t count, DType t, ReduceOp op, const CollectiveCall& c) override {
    return reduce_to(buf, count, t, op, -1, c, "all_reduce");
  }
  Status reduce(void* buf, int64_t count, DType t, ReduceOp op, int root, const CollectiveCall& c) override {
    return reduce_to(buf, count, t, op, root, c, "reduce");
  }
  Status all_reduce_f64(double* buf, int64_t count, ReduceOp op, const CollectiveCall& c) override {
    std::vector<double> out(static_cast<size_t>(count));
    ZS_TRY(exchange(buf, c, "all_reduce_f64", [&](const std::vector<const void*>& p) {
      for (int64_t i = 0; i < count; ++i) {
        double acc = 0;
        for (size_t q = 0; q < p.size(); ++q) {
          const double x = static_cast<const double*>(p[q])[i];
          acc = q == 0 ? x : acc + x;
        }
        out[static_cast<size_t>(i)] = op == ReduceOp::avg ? acc / static_cast<double>(p.size()) : acc;
      }
    }));
    std::copy(out.begin(), out.end(), buf);
    return {};
  }
  Status broadcast(void* buf, int64_t bytes, int root, const CollectiveCall& c) override {
    return exchange(buf, c, "broadcast", [&](const std::vector<const void*>& p) {
      if (rank_ != root && bytes > 0) std::memcpy(buf, p[static_cast<size_t>(root)], static_cast<size_t>(bytes));
    });
  }
  Status barrier(const CollectiveCall& c) override {
    return exchange(nullptr, c, "barrier", [](const std::vector<const void*>&) {});
  }

 private:
  Status reduce_to(void* buf, int64_t count, DType t, ReduceOp op, int root, const CollectiveCall& c,
                   const char* kind) {
    const int64_t b = count * dtype_bytes(t);
    std::vector<unsigned char> out(static_cast<size_t>(b));
    const bool mine = root < 0 || root == rank_;
    ZS_TRY(exchange(buf, c, kind, [&](const std::vector<const void*>& p) {
      if (mine) reduce_rank_order(t, out.data(), p, count, op);
    }));
    if (mine && b > 0) std::memcpy(buf, out.data(), static_cast<size_t>(b));
    return {};
  }

  template <class Use>
  Status exchange(const void* mine, const CollectiveCall& c, const char* kind, Use use) {
    Hub& h = *h_;
    std::unique_lock<std::mutex> lk(h.mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(h.timeout_s);
    auto timeout = [&](const std::string& why) -> Status {
      h.broken = true;
      h.cv.notify_all();
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", h.timeout_s);
      return core::Error{core::ErrorKind::io, "collective '" + c.op_name + "' (" + kind + ") timed out after " + secs +
                                                  " s on rank " + std::to_string(rank_) + " of " +
                                                  std::to_string(h.world) + ": " + why};
    };
    auto missing = [&] {
      std::string m;
      for (int q = 0; q < h.world; ++q)
        if (!h.here[static_cast<size_t>(q)]) m += (m.empty() ? "" : ", ") + std::to_string(q);
      return "rank(s) " + m + " did not arrive";
    };
    if (h.broken) return core::Error{core::ErrorKind::io, c.op_name + ": the thread group failed earlier"};
    if (!h.cv.wait_until(lk, deadline, [&] { return !h.draining || h.broken; }) || h.broken)
      return timeout("the previous collective did not finish");
    const int64_t g = h.gen;
    h.post[static_cast<size_t>(rank_)] = mine;
    h.here[static_cast<size_t>(rank_)] = 1;
    if (++h.arrived == h.world) {
      h.draining = true;
      h.cv.notify_all();
    }
    if (!h.cv.wait_until(lk, deadline, [&] { return h.draining || h.broken; }) || h.broken) return timeout(missing());
    const std::vector<const void*> p = h.post;
    lk.unlock();
    use(p);
    lk.lock();
    if (++h.left == h.world) {
      h.arrived = h.left = 0;
      std::fill(h.here.begin(), h.here.end(), 0);
      h.draining = false;
      ++h.gen;
      h.cv.notify_all();
      return {};
    }
    if (!h.cv.wait_until(lk, deadline, [&] { return h.gen != g || h.broken; }) || h.broken)
      return timeout("a rank did not finish reading");
    return {};
  }

  std::shared_ptr<Hub> h_;
  int rank_;
};

}  // namespace

void reduce_rank_order(DType t, void* out, const std::vector<const void*>& in, int64_t count, ReduceOp op) {
  dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    std::vector<const T*> p;
    for (const void* x : in) p.push_back(static_cast<const T*>(x));
    reduce_in_order<T>(static_cast<T*>(out), p, count, op == ReduceOp::avg);
  });
}

std::vector<std::unique_ptr<Communicator>> make_thread_group(int world, const CommunicatorOptions& o) {
  auto h = std::make_shared<Hub>();
  h->world = std::max(1, world);
  h->timeout_s = o.timeout_s;
  h->post.assign(static_cast<size_t>(h->world), nullptr);
  h->here.assign(static_cast<size_t>(h->world), 0);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < h->world; ++r) out.push_back(std::make_unique<ThreadRank>(h, r));
  return out;
}

std::unique_ptr<Communicator> make_single_rank_communicator() { return std::make_unique<SingleRank>(); }

}  // namespace zs::exec
