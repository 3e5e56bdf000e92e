// IoEnv: the swapper's only door to files and asynchronous I/O (leveldb's Env). The real one is POSIX +
// libaio (O_DIRECT, fallocate, io_submit/io_getevents); FaultInjectionEnv wraps it to produce ENOSPC, EIO,
// short transfers, missing/unwritable paths and corrupted reads on demand, so every failure path is tested.
//   IoEnv* env = default_io_env();
//   auto q = env->make_queue(32);                      // one per I/O thread
//   q.value()->submit({{fd, true, 0, buf, 1 << 20, /*tag=*/7}});
//   IoCompletion c[1];  auto n = q.value()->reap(1, c);  // c[0].result: bytes moved or −errno
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::exec {

using core::Result;
using core::Status;

struct IoRequest {
  int fd = -1;
  bool write = false;
  int64_t offset = 0;   // file offset; 4096-aligned for O_DIRECT
  void* buf = nullptr;  // for O_DIRECT aligned to the directory's DirCaps::memory_alignment
  int64_t len = 0;
  uint64_t tag = 0;  // returned in the completion
};

struct IoCompletion {
  uint64_t tag = 0;
  int64_t result = 0;  // bytes transferred, or −errno
};

// A queue of in-flight requests (an aio context). Used by one thread at a time; at most `depth` in flight.
class IoQueue {
 public:
  virtual ~IoQueue() = default;
  // Hands every request to the kernel (one io_submit for the span). An error means none of the remaining
  // requests is in flight.
  virtual Status submit(std::span<const IoRequest> reqs) = 0;
  // Blocks until at least `min_n` completions arrive (min_n ≤ requests in flight); returns how many were
  // written to `out` (at most out.size()). min_n == 0 polls: whatever has completed, without blocking.
  virtual Result<int> reap(int min_n, std::span<IoCompletion> out) = 0;
};

enum class Access { read, write };

// What a directory's file system offers the swapper.
struct DirCaps {
  bool direct = false;  // files accept O_DIRECT
  // The memory alignment an O_DIRECT transfer needs there: statx's STATX_DIOALIGN of a file in it (Linux 6.1+;
  // 512 on ext4 over a 512-byte-sector drive), 4096 where the file system does not say; 1 without O_DIRECT.
  int64_t memory_alignment = 4096;
};

// Errors carry the OS's words ("No space left on device"); callers add the file and tensor.
class IoEnv {
 public:
  virtual ~IoEnv() = default;
  virtual const char* name() const = 0;
  // Write access creates the file (mode 0600). `direct` adds O_DIRECT.
  virtual Result<int> open(const std::string& path, Access access, bool direct) = 0;
  virtual void close(int fd) = 0;
  // Reserves `bytes` on disk (fallocate) and sets the file size to exactly `bytes`.
  virtual Status allocate(int fd, int64_t bytes) = 0;
  virtual Result<int64_t> file_size(int fd) = 0;
  virtual Status remove(const std::string& path) = 0;
  // Checks that `dir` is a writable directory and returns whether files in it accept O_DIRECT, and the memory
  // alignment such transfers need there.
  virtual Result<DirCaps> probe_dir(const std::string& dir) = 0;
  virtual Result<std::unique_ptr<IoQueue>> make_queue(int depth) = 0;
};

// POSIX files + libaio when built with it (ZEROSIM_HAVE_AIO), else synchronous pread/pwrite queues.
IoEnv* default_io_env();
bool built_with_libaio();
// Bytes statvfs reports for the file system holding `dir` (0 on error), and its type name ("ext4", "tmpfs").
int64_t filesystem_bytes(const std::string& dir);
std::string filesystem_type(const std::string& dir);

enum class Fault {
  open_missing,     // open() → ENOENT
  open_denied,      // open() and probe_dir() → EACCES (an unwritable path)
  allocate_enospc,  // allocate() → ENOSPC
  write_enospc,     // a write completes with −ENOSPC
  write_eio,        // a write completes with −EIO
  read_eio,         // a read completes with −EIO
  short_write,      // a write completes with half its bytes
  short_read,       // a read completes with half its bytes
  corrupt_read,     // a read completes in full, then one byte of the buffer is flipped
  no_direct,        // probe_dir() reports no O_DIRECT and open(direct) → EINVAL (tmpfs before Linux 6.6)
};
const char* to_string(Fault f);

struct FaultRule {
  Fault fault;
  std::string path_contains;  // "" = any file
  int64_t skip = 0;           // matching operations let through before the fault fires
  int64_t times = 1;          // how often it fires; −1 = forever
};

// Wraps another env and injects the faults in its rules. Thread-safe.
class FaultInjectionEnv : public IoEnv {
 public:
  explicit FaultInjectionEnv(IoEnv* base = default_io_env()) : base_(base) {}
  void add(FaultRule rule);
  void clear();
  int64_t fired(Fault f) const;  // how often a fault fired

  const char* name() const override { return "fault-injection"; }
  Result<int> open(const std::string& path, Access access, bool direct) override;
  void close(int fd) override;
  Status allocate(int fd, int64_t bytes) override;
  Result<int64_t> file_size(int fd) override { return base_->file_size(fd); }
  Status remove(const std::string& path) override { return base_->remove(path); }
  Result<DirCaps> probe_dir(const std::string& dir) override;
  // probe_dir() reports this O_DIRECT memory alignment (0: the base env's), to test both sides of zero-copy.
  void set_memory_alignment(int64_t bytes) { memory_alignment_ = bytes; }
  Result<std::unique_ptr<IoQueue>> make_queue(int depth) override;

  // For the queue wrapper: does a fault fire for this operation on this fd? Consumes one firing.
  bool take(Fault f, int fd);
  bool take_path(Fault f, const std::string& path);

 private:
  struct Rule {
    FaultRule r;
    int64_t seen = 0, fired = 0;
  };
  IoEnv* base_;
  int64_t memory_alignment_ = 0;
  mutable std::mutex mu_;
  std::vector<Rule> rules_;
  std::map<int, std::string> fd_paths_;
  std::map<Fault, int64_t> fired_;
};

}  // namespace zs::exec
