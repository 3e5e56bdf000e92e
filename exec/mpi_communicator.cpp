// The MPI communicator (mpi_communicator.h): collectives as tagged point-to-point messages polled against a
// deadline, reductions in rank order in the dtype, the MPI runtime guard.
#include "exec/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace zs::exec {
namespace {

using core::Error;
using core::ErrorKind;

std::string mpi_error(int rc) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(buf, static_cast<size_t>(len));
}

class Mpi : public Communicator {
 public:
  Mpi(MPI_Comm comm, int rank, int world, const MpiCommunicatorOptions& o)
      : comm_(comm), rank_(rank), world_(world), o_(o) {}
  ~Mpi() override {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "mpi"; }

  Status all_gather(void* recv, const void* send, int64_t count, DType t, const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    const int64_t b = count * dtype_bytes(t);
    ZS_TRY(begin(c, "all_gather", b));
    if (skip()) return {};
    auto* r = static_cast<unsigned char*>(recv);
    if (send != r + rank_ * b && b > 0) std::memmove(r + rank_ * b, send, static_cast<size_t>(b));
    Pending p;
    for (int q = 0; q < world_; ++q) {
      if (q == rank_) continue;
      ZS_TRY(irecv(p, r + q * b, b, q, c));
      ZS_TRY(isend(p, r + rank_ * b, b, q, c));
    }
    return wait(p, c, "all_gather");
  }

  Status reduce_scatter(void* recv, const void* send, int64_t count, DType t, ReduceOp op,
                        const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    const int64_t b = count * dtype_bytes(t);
    ZS_TRY(begin(c, "reduce_scatter", b));
    if (skip()) return {};
    const auto* s = static_cast<const unsigned char*>(send);
    scratch_.resize(static_cast<size_t>(b * world_));
    Pending p;
    for (int q = 0; q < world_; ++q) {
      if (q == rank_) continue;
      ZS_TRY(irecv(p, scratch_.data() + q * b, b, q, c));
      ZS_TRY(isend(p, s + q * b, b, q, c));
    }
    ZS_TRY(wait(p, c, "reduce_scatter"));
    if (b > 0) std::memcpy(scratch_.data() + rank_ * b, s + rank_ * b, static_cast<size_t>(b));
    std::vector<const void*> in;
    for (int q = 0; q < world_; ++q) in.push_back(scratch_.data() + q * b);
    reduce_rank_order(t, recv, in, count, op);
    return {};
  }

  Status all_reduce(void* buf, int64_t count, DType t, ReduceOp op, const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    const int64_t b = count * dtype_bytes(t);
    ZS_TRY(begin(c, "all_reduce", b));
    if (skip()) return {};
    ZS_TRY(gather_all(buf, b, c, "all_reduce"));
    std::vector<const void*> in;
    for (int q = 0; q < world_; ++q) in.push_back(scratch_.data() + q * b);
    reduce_rank_order(t, buf, in, count, op);
    return {};
  }

  Status reduce(void* buf, int64_t count, DType t, ReduceOp op, int root, const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    const int64_t b = count * dtype_bytes(t);
    ZS_TRY(begin(c, "reduce", b));
    if (root < 0 || root >= world_)
      return Error{ErrorKind::internal,
                   c.op_name + ": reduce to rank " + std::to_string(root) + " of " + std::to_string(world_)};
    if (skip()) return {};
    Pending p;
    if (rank_ != root) {
      ZS_TRY(isend(p, buf, b, root, c));
      return wait(p, c, "reduce");
    }
    scratch_.resize(static_cast<size_t>(b * world_));
    for (int q = 0; q < world_; ++q)
      if (q != rank_) ZS_TRY(irecv(p, scratch_.data() + q * b, b, q, c));
    ZS_TRY(wait(p, c, "reduce"));
    if (b > 0) std::memcpy(scratch_.data() + rank_ * b, buf, static_cast<size_t>(b));
    std::vector<const void*> in;
    for (int q = 0; q < world_; ++q) in.push_back(scratch_.data() + q * b);
    reduce_rank_order(t, buf, in, count, op);
    return {};
  }

  Status all_reduce_f64(double* buf, int64_t count, ReduceOp op, const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    const int64_t b = count * 8;
    ZS_TRY(begin(c, "all_reduce_f64", b));
    if (skip()) return {};
    ZS_TRY(gather_all(buf, b, c, "all_reduce_f64"));
    for (int64_t i = 0; i < count; ++i) {
      double acc = 0;
      for (int q = 0; q < world_; ++q) {
        double x;
        std::memcpy(&x, scratch_.data() + q * b + i * 8, 8);
        acc = q == 0 ? x : acc + x;
      }
      buf[i] = op == ReduceOp::avg ? acc / world_ : acc;
    }
    return {};
  }

  Status broadcast(void* buf, int64_t bytes, int root, const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    ZS_TRY(begin(c, "broadcast", bytes));
    if (root < 0 || root >= world_)
      return Error{ErrorKind::internal,
                   c.op_name + ": broadcast from rank " + std::to_string(root) + " of " + std::to_string(world_)};
    if (skip()) return {};
    Pending p;
    if (rank_ == root) {
      for (int q = 0; q < world_; ++q)
        if (q != rank_) ZS_TRY(isend(p, buf, bytes, q, c));
    } else {
      ZS_TRY(irecv(p, buf, bytes, root, c));
    }
    return wait(p, c, "broadcast");
  }

  Status barrier(const CollectiveCall& c) override {
    std::lock_guard<std::mutex> lk(mu_);
    ZS_TRY(begin(c, "barrier", 0));
    if (skip()) return {};
    Pending p;
    unsigned char dummy = 0;
    for (int q = 0; q < world_; ++q) {
      if (q == rank_) continue;
      ZS_TRY(irecv(p, &dummy, 0, q, c));
      ZS_TRY(isend(p, &dummy, 0, q, c));
    }
    return wait(p, c, "barrier");
  }

 private:
  struct Pending {
    std::vector<MPI_Request> reqs;
    std::vector<int> from;  // the peer of a receive, -1 for a send
  };

  Status begin(const CollectiveCall& c, const char* kind, int64_t bytes) {
    if (broken_)
      return Error{ErrorKind::io, c.op_name + " (" + kind +
                                      "): the MPI communicator is unusable after an earlier "
                                      "timeout on rank " +
                                      std::to_string(rank_)};
    if (bytes < 0) return Error{ErrorKind::internal, c.op_name + " (" + kind + "): negative size"};
    tag_ = static_cast<int>(seq_ % 32767);
    ++seq_;
    return {};
  }
  // The test hook: this rank leaves the call out (its sequence number still advances, so tags no longer match).
  bool skip() const {
    if (rank_ != o_.skip_rank || seq_ - 1 != o_.skip_call) return false;
    if (o_.skip_hang_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o_.skip_hang_s));
    return true;
  }

  // A message of `bytes`, in pieces of at most max_message_bytes (a zero-byte message is one piece).
  template <class Post>
  Status pieces(int64_t bytes, Post post) {
    const int64_t max = std::clamp<int64_t>(o_.max_message_bytes, 1, INT_MAX);
    int64_t off = 0;
    do {
      const int64_t n = std::min(max, bytes - off);
      ZS_TRY(post(off, static_cast<int>(n)));
      off += n;
    } while (off < bytes);
    return {};
  }
  Status isend(Pending& p, const void* buf, int64_t bytes, int to, const CollectiveCall& c) {
    return pieces(
        bytes, [&](int64_t off, int n) { return isend1(p, static_cast<const unsigned char*>(buf) + off, n, to, c); });
  }
  Status irecv(Pending& p, void* buf, int64_t bytes, int from, const CollectiveCall& c) {
    return pieces(bytes,
                  [&](int64_t off, int n) { return irecv1(p, static_cast<unsigned char*>(buf) + off, n, from, c); });
  }
  Status isend1(Pending& p, const void* buf, int bytes, int to, const CollectiveCall& c) {
    MPI_Request r;
    const int rc = MPI_Isend(buf, bytes, MPI_BYTE, to, tag_, comm_, &r);
    if (rc != MPI_SUCCESS)
      return Error{ErrorKind::io, c.op_name + ": MPI_Isend to rank " + std::to_string(to) + " failed on rank " +
                                      std::to_string(rank_) + ": " + mpi_error(rc)};
    p.reqs.push_back(r);
    p.from.push_back(-1);
    return {};
  }
  Status irecv1(Pending& p, void* buf, int bytes, int from, const CollectiveCall& c) {
    MPI_Request r;
    const int rc = MPI_Irecv(buf, bytes, MPI_BYTE, from, tag_, comm_, &r);
    if (rc != MPI_SUCCESS)
      return Error{ErrorKind::io, c.op_name + ": MPI_Irecv from rank " + std::to_string(from) + " failed on rank " +
                                      std::to_string(rank_) + ": " + mpi_error(rc)};
    p.reqs.push_back(r);
    p.from.push_back(from);
    return {};
  }
  // every rank's buf [bytes] into scratch_ [world · bytes], in rank order
  Status gather_all(const void* buf, int64_t b, const CollectiveCall& c, const char* kind) {
    scratch_.resize(static_cast<size_t>(b * world_));
    if (b > 0) std::memcpy(scratch_.data() + rank_ * b, buf, static_cast<size_t>(b));
    Pending p;
    for (int q = 0; q < world_; ++q) {
      if (q == rank_) continue;
      ZS_TRY(irecv(p, scratch_.data() + q * b, b, q, c));
      ZS_TRY(isend(p, buf, b, q, c));
    }
    return wait(p, c, kind);
  }

  // Polls until every message completed or the deadline passed (then names the ranks whose messages are missing).
  Status wait(Pending& p, const CollectiveCall& c, const char* kind) {
    using clk = std::chrono::steady_clock;
    const auto t0 = clk::now();
    const auto deadline = t0 + std::chrono::duration<double>(o_.timeout_s);
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      const int rc = MPI_Testall(static_cast<int>(p.reqs.size()), p.reqs.data(), &done, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS)
        return Error{ErrorKind::io,
                     c.op_name + " (" + kind + ") failed on rank " + std::to_string(rank_) + ": " + mpi_error(rc)};
      if (done) return {};
      if (clk::now() > deadline) break;
      if (polls < 200)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(polls < 2000 ? 20 : 200));
    }
    std::string missing;
    for (size_t i = 0; i < p.reqs.size(); ++i) {
      if (p.from[i] < 0 || p.reqs[i] == MPI_REQUEST_NULL) continue;
      int f = 0;
      MPI_Test(&p.reqs[i], &f, MPI_STATUS_IGNORE);
      if (f) continue;
      missing += (missing.empty() ? "" : ", ") + std::to_string(p.from[i]);
      MPI_Cancel(&p.reqs[i]);
      MPI_Request_free(&p.reqs[i]);
    }
    broken_ = true;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", o_.timeout_s);
    std::string msg = "collective '" + c.op_name + "' (" + kind + ", call #" + std::to_string(seq_ - 1) +
                      ") timed out after " + secs + " s on rank " + std::to_string(rank_) + " of " +
                      std::to_string(world_);
    msg += missing.empty() ? ": every peer's data arrived, a peer did not take this rank's"
                           : ": rank(s) " + missing + " did not arrive";
    return Error{ErrorKind::io, msg};
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, world_ = 1;
  MpiCommunicatorOptions o_;
  std::mutex mu_;
  int64_t seq_ = 0;
  int tag_ = 0;
  bool broken_ = false;
  std::vector<unsigned char> scratch_;
};

}  // namespace

bool launched_under_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

core::Result<std::unique_ptr<MpiRuntime>> MpiRuntime::init(int* argc, char*** argv) {
  int already = 0;
  MPI_Initialized(&already);
  if (already) return core::internal_error("MPI is already initialised");
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) return core::io_error("MPI_Init_thread failed: " + mpi_error(rc));
  std::unique_ptr<MpiRuntime> rt(new MpiRuntime());
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED)
    return core::io_error("MPI provides thread level " + std::to_string(provided) +
                          "; the engine needs MPI_THREAD_SERIALIZED (collectives run on the comm stream's thread)");
  MPI_Comm_rank(MPI_COMM_WORLD, &rt->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &rt->world_);
  MPI_Comm local;
  rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rt->rank_, MPI_INFO_NULL, &local);
  if (rc != MPI_SUCCESS) return core::io_error("MPI_Comm_split_type failed: " + mpi_error(rc));
  MPI_Comm_rank(local, &rt->local_rank_);
  MPI_Comm_size(local, &rt->local_size_);
  MPI_Comm_free(&local);
  return rt;
}

MpiRuntime::~MpiRuntime() {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

void MpiRuntime::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; this keeps [[noreturn]] honest if it does
}

core::Result<std::unique_ptr<Communicator>> make_mpi_communicator(const MpiCommunicatorOptions& o) {
  int init = 0;
  MPI_Initialized(&init);
  if (!init) return core::internal_error("make_mpi_communicator: MPI is not initialised (MpiRuntime::init)");
  if (!(o.timeout_s > 0)) return core::bad_input("communicator timeout must be > 0 s");
  MPI_Comm dup;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  if (rc != MPI_SUCCESS) return core::io_error("MPI_Comm_dup failed: " + mpi_error(rc));
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  MPI_Comm_rank(dup, &rank);
  MPI_Comm_size(dup, &world);
  return std::unique_ptr<Communicator>(new Mpi(dup, rank, world, o));
}

}  // namespace zs::exec
