// Internal to exec/: the Swapper's state (Swapper::Impl), its operations, chunks and I/O threads, shared by
// swapper.cpp (the public calls: create, swap_out, swap_in, ...) and swapper_io.cpp (I/O threads, completions,
// the copier). Not included outside exec/swapper*.cpp.
//   op (one swap_out/swap_in) → chunks (one pool buffer or one zero-copy span each) → block ranges per I/O
//   thread (Job) → iocbs (BlockIo, the aio tag) → completions → copier (copy out / checksums) → op done.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "exec/pinned_buffer.h"
#include "exec/spin.h"
#include "exec/swapper.h"

namespace zs::exec {
namespace swap_detail {

constexpr int64_t kAlign = 4096;
inline int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
std::string hex32(uint32_t v);
// Tensor names become file names: keep [A-Za-z0-9._-], escape the rest as %XX.
std::string escape_name(const std::string& name);

// What is on disk for one tensor.
struct TensorMeta {
  int64_t bytes = 0, padded = 0;
  std::vector<std::string> files;  // per path; "" where the tensor has no stripe units
  std::vector<int64_t> file_bytes;
  std::vector<uint32_t> chunk_crc;  // per chunk; empty when written without checksums
  bool valid = false;
  std::string last_error;
};

}  // namespace swap_detail

struct SwapHandle::Op {
  std::string tensor;
  bool write = false;
  std::vector<std::string> files;
  std::vector<int> fds;
  unsigned char* dst = nullptr;        // swap_in destination
  std::vector<uint32_t> expected_crc;  // swap_in: verify against these (empty = no check)
  swap_detail::TensorMeta meta;        // swap_out: committed to the record on completion

  std::mutex mu;
  std::condition_variable cv;
  int64_t chunks_total = -1;  // known once every chunk is submitted
  int64_t chunks_done = 0;
  bool finishing = false, done = false;
  std::atomic<bool> done_flag{false};  // `done`, for wait()'s spin before it blocks
  std::optional<core::Error> error;

  void fail(core::Error e) {
    std::lock_guard<std::mutex> lk(mu);
    if (!error) error = std::move(e);
  }
  bool failed() {
    std::lock_guard<std::mutex> lk(mu);
    return error.has_value();
  }
  void mark_done() {  // with mu held
    done = true;
    done_flag.store(true, std::memory_order_release);
  }
  // Spins briefly before it blocks (spin.h): a waiter parked on a condition variable is woken onto an idle vCPU
  // ~50-150 us late, and a half-MiB swap passes through four threads (caller, I/O thread, completion, copier).
  Status wait() {
    (void)spin_until([&] { return done_flag.load(std::memory_order_acquire); });
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return done; });
    if (error) return *error;
    return {};
  }
  const char* verb() const { return write ? "swap_out" : "swap_in"; }
};

namespace swap_detail {

using Op = SwapHandle::Op;

struct Chunk {
  std::shared_ptr<Op> op;
  unsigned char* buf = nullptr;  // a pool buffer, or the caller's memory when `pooled` is false (zero-copy)
  bool pooled = true;
  int64_t index = 0;
  int64_t offset = 0;  // tensor byte offset, a multiple of buffer_bytes
  int64_t len = 0;     // tensor bytes in this chunk
  int64_t io_len = 0;  // bytes moved (len padded to 4 KiB)
  std::atomic<int64_t> pending{0};
  std::atomic<bool> failed{false};
};

struct Job {
  std::shared_ptr<Chunk> chunk;
  int64_t next = 0, end = 0;  // block range of the chunk
};

struct BlockIo {
  std::shared_ptr<Chunk> chunk;
  int path = 0;
  int64_t file_offset = 0, len = 0;
};

struct Worker {
  std::thread thread;
  std::unique_ptr<IoQueue> queue;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;
  std::atomic<int64_t> queued{0};  // jobs.size(), for the spin before the thread sleeps
  bool stop = false;
};

struct Record {
  TensorMeta meta;
  std::shared_ptr<Op> last;
};

}  // namespace swap_detail

using swap_detail::BlockIo;
using swap_detail::Chunk;
using swap_detail::Job;
using swap_detail::Op;
using swap_detail::Record;
using swap_detail::Worker;

struct Swapper::Impl {
  SwapperOptions o;
  IoEnv* env = nullptr;
  int64_t chunk_bytes = 0;
  std::vector<bool> direct;
  // The memory alignment zero-copy transfers need: the largest of the O_DIRECT paths' (io_env.h DirCaps), 1
  // when none is O_DIRECT.
  int64_t memory_alignment = 1;
  bool aligned(const void* p) const {
    return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(memory_alignment) == 0;
  }
  std::vector<std::string> warnings;

  PinnedBuffer pool;
  std::mutex pool_mu;
  std::condition_variable pool_cv;
  std::vector<unsigned char*> free_bufs;
  int in_use = 0, peak_in_use = 0;
  int64_t pool_waits = 0;

  std::vector<std::unique_ptr<Worker>> workers;

  // Copies finished read chunks out of the pool (verifying checksums) so the I/O threads never stop
  // submitting to do CPU work.
  std::thread copier;
  std::mutex copy_mu;
  std::condition_variable copy_cv;
  std::deque<std::shared_ptr<Chunk>> copy_q;
  std::atomic<int64_t> copy_queued{0};  // copy_q.size(), for the copier's spin before it sleeps
  bool copy_stop = false;

  mutable std::mutex rec_mu;
  std::map<std::string, Record> records;
  std::atomic<int64_t> bytes_written{0}, bytes_read{0}, zero_copy_chunks{0};

  ~Impl();

  void copier_loop();

  int paths() const { return static_cast<int>(o.paths.size()); }

  unsigned char* acquire_buffer();
  void release_buffer(unsigned char* b);

  // Stripe unit u of a tensor lives in path u % P at file offset (u / P)·block_size.
  void locate(int64_t tensor_offset, int* path, int64_t* file_offset) const;

  std::vector<int64_t> file_sizes(int64_t padded) const;

  std::string file_name(const std::string& tensor, int p) const;

  // Files a chunk touches, for error messages.
  std::string chunk_files(const Chunk& c) const;

  void wait_previous(const std::string& name);

  void close_fds(Op& op);

  // Last chunk done (or none): close files, commit what a swap_out wrote, wake the waiters.
  void complete(const std::shared_ptr<Op>& op);

  void chunk_done(const std::shared_ptr<Op>& op);

  void all_submitted(const std::shared_ptr<Op>& op, int64_t chunks);

  void finish_chunk(const std::shared_ptr<Chunk>& c);

  void copy_out(const std::shared_ptr<Chunk>& c);

  void block_done(BlockIo* b, int64_t result);

  // One I/O thread: turns its block ranges into iocbs, at most queue_depth in flight.
  void worker_loop(Worker& w);

  // Splits a chunk's blocks into one contiguous range per I/O thread (DeepSpeed's intra-op split).
  void dispatch(const std::shared_ptr<Chunk>& c);

  Status check_name(const char* verb, const std::string& name, const void* data, int64_t bytes) const;
};

}  // namespace zs::exec
