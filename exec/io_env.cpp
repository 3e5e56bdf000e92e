#include "exec/io_env.h"

#include <fcntl.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <set>

#ifdef ZEROSIM_HAVE_AIO
#include <libaio.h>
#endif

namespace zs::exec {
namespace {

using core::io_error;

std::string errno_text(int e) { return std::strerror(e); }

// The memory alignment O_DIRECT needs for `file` (statx STATX_DIOALIGN, Linux 6.1+); 4096 where the kernel or the
// file system does not say, or says more than a page (the swapper's buffers are page-aligned).
int64_t dio_memory_alignment(const std::string& file) {
#ifdef STATX_DIOALIGN
  struct statx sx {};
  if (::statx(AT_FDCWD, file.c_str(), 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
      sx.stx_dio_mem_align > 0 && sx.stx_dio_mem_align <= 4096 &&
      (sx.stx_dio_mem_align & (sx.stx_dio_mem_align - 1)) == 0)
    return sx.stx_dio_mem_align;
#else
  (void)file;
#endif
  return 4096;
}

// ---- synchronous queue: pread/pwrite at submit time (no libaio, or as a reference) ----
class SyncQueue : public IoQueue {
 public:
  Status submit(std::span<const IoRequest> reqs) override {
    for (const auto& r : reqs) {
      ssize_t n = r.write ? ::pwrite(r.fd, r.buf, static_cast<size_t>(r.len), r.offset)
                          : ::pread(r.fd, r.buf, static_cast<size_t>(r.len), r.offset);
      done_.push_back({r.tag, n < 0 ? -static_cast<int64_t>(errno) : static_cast<int64_t>(n)});
    }
    return {};
  }
  Result<int> reap(int min_n, std::span<IoCompletion> out) override {
    int n = 0;
    while (!done_.empty() && n < static_cast<int>(out.size())) {
      out[static_cast<size_t>(n++)] = done_.front();
      done_.pop_front();
    }
    if (n < min_n) return core::internal_error("sync io queue: fewer completions than requested");
    return n;
  }

 private:
  std::deque<IoCompletion> done_;
};

#ifdef ZEROSIM_HAVE_AIO
// ---- libaio: one io_context per queue, `depth` preallocated iocbs (DeepSpeed's aio_context) ----
class AioQueue : public IoQueue {
 public:
  static Result<std::unique_ptr<IoQueue>> create(int depth) {
    auto q = std::unique_ptr<AioQueue>(new AioQueue(depth));
    const int rc = io_setup(depth, &q->ctx_);
    if (rc < 0)
      return io_error("io_setup(" + std::to_string(depth) + "): " + errno_text(-rc) +
                      (rc == -EAGAIN ? " (raise /proc/sys/fs/aio-max-nr)" : ""));
    q->live_ = true;
    return std::unique_ptr<IoQueue>(std::move(q));
  }
  ~AioQueue() override {
    if (live_) io_destroy(ctx_);
  }

  Status submit(std::span<const IoRequest> reqs) override {
    if (reqs.empty()) return {};
    if (free_.size() < reqs.size()) return core::internal_error("aio queue: more requests than queue depth");
    ptrs_.clear();
    for (const auto& r : reqs) {
      iocb* cb = free_.back();
      free_.pop_back();
      if (r.write)
        io_prep_pwrite(cb, r.fd, r.buf, static_cast<size_t>(r.len), r.offset);
      else
        io_prep_pread(cb, r.fd, r.buf, static_cast<size_t>(r.len), r.offset);
      cb->data = reinterpret_cast<void*>(r.tag);
      ptrs_.push_back(cb);
    }
    size_t done = 0;
    while (done < ptrs_.size()) {
      const int rc = io_submit(ctx_, static_cast<long>(ptrs_.size() - done), ptrs_.data() + done);
      if (rc == -EINTR) continue;
      if (rc < 0) {
        for (size_t i = done; i < ptrs_.size(); ++i) free_.push_back(ptrs_[i]);
        return io_error("io_submit: " + errno_text(-rc));
      }
      done += static_cast<size_t>(rc);
    }
    return {};
  }

  Result<int> reap(int min_n, std::span<IoCompletion> out) override {
    const int max_n = static_cast<int>(std::min(out.size(), events_.size()));
    int rc;
    timespec now{0, 0};  // min_n == 0: a poll, which must not block
    do {
      rc = io_getevents(ctx_, min_n, max_n, events_.data(), min_n == 0 ? &now : nullptr);
    } while (rc == -EINTR);
    if (rc < 0) return io_error("io_getevents: " + errno_text(-rc));
    for (int i = 0; i < rc; ++i) {
      const io_event& e = events_[static_cast<size_t>(i)];
      // res is the byte count or −errno (as an unsigned long); res2 is unused by regular files.
      out[static_cast<size_t>(i)] = {reinterpret_cast<uint64_t>(e.data),
                                     static_cast<int64_t>(static_cast<long>(e.res))};
      free_.push_back(e.obj);
    }
    return rc;
  }

 private:
  explicit AioQueue(int depth) : iocbs_(static_cast<size_t>(depth)), events_(static_cast<size_t>(depth)) {
    for (auto& cb : iocbs_) free_.push_back(&cb);
  }
  io_context_t ctx_ = nullptr;
  bool live_ = false;
  std::vector<iocb> iocbs_;
  std::vector<iocb*> free_, ptrs_;
  std::vector<io_event> events_;
};
#endif

class PosixEnv : public IoEnv {
 public:
  const char* name() const override { return built_with_libaio() ? "posix+libaio" : "posix+pread"; }

  Result<int> open(const std::string& path, Access access, bool direct) override {
    int flags = access == Access::read ? O_RDONLY : (O_WRONLY | O_CREAT);
    flags |= O_CLOEXEC;
    if (direct) flags |= O_DIRECT;
    const int fd = ::open(path.c_str(), flags, 0600);
    if (fd < 0) return io_error(errno_text(errno));
    return fd;
  }
  void close(int fd) override {
    if (fd >= 0) ::close(fd);
  }
  Status allocate(int fd, int64_t bytes) override {
    if (bytes > 0) {
      int rc = ::fallocate(fd, 0, 0, bytes);
      if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) rc = 0;  // fs without fallocate: size below
      if (rc != 0) return io_error("fallocate: " + errno_text(errno));
    }
    struct stat st;
    if (::fstat(fd, &st) != 0) return io_error("fstat: " + errno_text(errno));
    if (st.st_size != bytes && ::ftruncate(fd, bytes) != 0) return io_error("ftruncate: " + errno_text(errno));
    return {};
  }
  Result<int64_t> file_size(int fd) override {
    struct stat st;
    if (::fstat(fd, &st) != 0) return io_error("fstat: " + errno_text(errno));
    return static_cast<int64_t>(st.st_size);
  }
  Status remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return io_error(errno_text(errno));
    return {};
  }
  Result<DirCaps> probe_dir(const std::string& dir) override {
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0) return io_error(errno_text(errno));
    if (!S_ISDIR(st.st_mode)) return io_error("not a directory");
    const std::string probe =
        dir + "/.zerosim_probe_" + std::to_string(::getpid()) + "_" + std::to_string(reinterpret_cast<uintptr_t>(&st));
    int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return io_error(errno_text(errno));
    ::close(fd);
    DirCaps caps;
    caps.direct = true;
    fd = ::open(probe.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0) {
      caps.direct = false;  // EINVAL: the file system refuses O_DIRECT (tmpfs before Linux 6.6, some FUSE)
      caps.memory_alignment = 1;
    } else {
      ::close(fd);
      caps.memory_alignment = dio_memory_alignment(probe);
    }
    ::unlink(probe.c_str());
    return caps;
  }
  Result<std::unique_ptr<IoQueue>> make_queue(int depth) override {
    if (depth < 1) return core::bad_input("aio queue_depth " + std::to_string(depth) + " must be >= 1");
#ifdef ZEROSIM_HAVE_AIO
    return AioQueue::create(depth);
#else
    return std::unique_ptr<IoQueue>(new SyncQueue());
#endif
  }
};

}  // namespace

IoEnv* default_io_env() {
  static PosixEnv env;
  return &env;
}

bool built_with_libaio() {
#ifdef ZEROSIM_HAVE_AIO
  return true;
#else
  return false;
#endif
}

int64_t filesystem_bytes(const std::string& dir) {
  struct statvfs s;
  if (::statvfs(dir.c_str(), &s) != 0) return 0;
  return static_cast<int64_t>(s.f_blocks) * static_cast<int64_t>(s.f_frsize);
}

std::string filesystem_type(const std::string& dir) {
  struct statfs s;
  if (::statfs(dir.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x01021994:
      return "tmpfs";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794c7630:
      return "overlayfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    case 0x2fc12fc1:
      return "zfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(s.f_type));
      return buf;
    }
  }
}

// ---------------- fault injection ----------------

const char* to_string(Fault f) {
  switch (f) {
    case Fault::open_missing:
      return "open_missing";
    case Fault::open_denied:
      return "open_denied";
    case Fault::allocate_enospc:
      return "allocate_enospc";
    case Fault::write_enospc:
      return "write_enospc";
    case Fault::write_eio:
      return "write_eio";
    case Fault::read_eio:
      return "read_eio";
    case Fault::short_write:
      return "short_write";
    case Fault::short_read:
      return "short_read";
    case Fault::corrupt_read:
      return "corrupt_read";
    case Fault::no_direct:
      return "no_direct";
  }
  return "?";
}

void FaultInjectionEnv::add(FaultRule rule) {
  std::lock_guard<std::mutex> lk(mu_);
  rules_.push_back({std::move(rule)});
}

void FaultInjectionEnv::clear() {
  std::lock_guard<std::mutex> lk(mu_);
  rules_.clear();
}

int64_t FaultInjectionEnv::fired(Fault f) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = fired_.find(f);
  return it == fired_.end() ? 0 : it->second;
}

bool FaultInjectionEnv::take_path(Fault f, const std::string& path) {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& rule : rules_) {
    if (rule.r.fault != f) continue;
    if (!rule.r.path_contains.empty() && path.find(rule.r.path_contains) == std::string::npos) continue;
    if (rule.r.times >= 0 && rule.fired >= rule.r.times) continue;
    if (rule.seen++ < rule.r.skip) continue;
    ++rule.fired;
    ++fired_[f];
    return true;
  }
  return false;
}

bool FaultInjectionEnv::take(Fault f, int fd) {
  std::string path;
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = fd_paths_.find(fd);
    if (it != fd_paths_.end()) path = it->second;
  }
  return take_path(f, path);
}

Result<int> FaultInjectionEnv::open(const std::string& path, Access access, bool direct) {
  if (take_path(Fault::open_missing, path)) return io_error(errno_text(ENOENT));
  if (access == Access::write && take_path(Fault::open_denied, path)) return io_error(errno_text(EACCES));
  if (direct && take_path(Fault::no_direct, path)) return io_error(errno_text(EINVAL));
  auto fd = base_->open(path, access, direct);
  if (fd) {
    std::lock_guard<std::mutex> lk(mu_);
    fd_paths_[*fd] = path;
  }
  return fd;
}

void FaultInjectionEnv::close(int fd) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    fd_paths_.erase(fd);
  }
  base_->close(fd);
}

Status FaultInjectionEnv::allocate(int fd, int64_t bytes) {
  if (take(Fault::allocate_enospc, fd)) return io_error("fallocate: " + errno_text(ENOSPC));
  return base_->allocate(fd, bytes);
}

Result<DirCaps> FaultInjectionEnv::probe_dir(const std::string& dir) {
  if (take_path(Fault::open_missing, dir)) return io_error(errno_text(ENOENT));
  if (take_path(Fault::open_denied, dir)) return io_error(errno_text(EACCES));
  auto r = base_->probe_dir(dir);
  if (r && take_path(Fault::no_direct, dir)) return DirCaps{false, 1};
  if (r && memory_alignment_ > 0) r->memory_alignment = memory_alignment_;
  return r;
}

namespace {

// Faulted requests never reach the kernel: their completions are made up and handed out first.
class FaultQueue : public IoQueue {
 public:
  FaultQueue(FaultInjectionEnv* env, std::unique_ptr<IoQueue> base) : env_(env), base_(std::move(base)) {}

  Status submit(std::span<const IoRequest> reqs) override {
    std::vector<IoRequest> pass;
    for (const auto& r : reqs) {
      int64_t fake = 1;  // 1 = not faulted
      if (r.write) {
        if (env_->take(Fault::write_enospc, r.fd))
          fake = -ENOSPC;
        else if (env_->take(Fault::write_eio, r.fd))
          fake = -EIO;
        else if (env_->take(Fault::short_write, r.fd))
          fake = r.len / 2;
      } else {
        if (env_->take(Fault::read_eio, r.fd))
          fake = -EIO;
        else if (env_->take(Fault::short_read, r.fd))
          fake = r.len / 2;
        else if (env_->take(Fault::corrupt_read, r.fd))
          corrupt_[r.tag] = static_cast<unsigned char*>(r.buf);
      }
      if (fake == 1) {
        pass.push_back(r);
      } else {
        fake_.push_back({r.tag, fake});
      }
    }
    Status s = base_->submit(pass);
    if (s.ok()) inflight_ += static_cast<int>(pass.size());
    return s;
  }

  Result<int> reap(int min_n, std::span<IoCompletion> out) override {
    int n = 0;
    while (!fake_.empty() && n < static_cast<int>(out.size())) {
      out[static_cast<size_t>(n++)] = fake_.front();
      fake_.pop_front();
    }
    if (inflight_ == 0 || n == static_cast<int>(out.size())) return n;
    const int want = std::min(std::max(min_n - n, 0), inflight_);
    auto got = base_->reap(want, out.subspan(static_cast<size_t>(n)));
    if (!got) return got;
    inflight_ -= *got;
    for (int i = n; i < n + *got; ++i) {
      auto& c = out[static_cast<size_t>(i)];
      auto it = corrupt_.find(c.tag);
      if (it != corrupt_.end()) {
        if (c.result > 0) it->second[c.result / 2] ^= 0x5a;
        corrupt_.erase(it);
      }
    }
    return n + *got;
  }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<IoQueue> base_;
  std::deque<IoCompletion> fake_;
  std::map<uint64_t, unsigned char*> corrupt_;
  int inflight_ = 0;
};

}  // namespace

Result<std::unique_ptr<IoQueue>> FaultInjectionEnv::make_queue(int depth) {
  auto q = base_->make_queue(depth);
  if (!q) return q.error();
  return std::unique_ptr<IoQueue>(new FaultQueue(this, std::move(*q)));
}

}  // namespace zs::exec
