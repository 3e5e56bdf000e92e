// The Swapper's public calls: create, swap_out, swap_in, wait_all, remove. The I/O threads and completions
// live in swapper_io.cpp; the shared state in swapper_impl.h.
#include <algorithm>
#include <cstring>

#include "exec/checksum.h"
#include "exec/swapper_impl.h"
#include "exec/thread_pool.h"

namespace zs::exec {

AioConfig aio_from_ds(const core::AioConfig& a) {
  AioConfig aio;
  aio.block_size = std::max<int64_t>(4096, a.block_size);
  aio.queue_depth = static_cast<int>(a.queue_depth);
  aio.intra_op_parallelism = static_cast<int>(a.intra_op_parallelism);
  aio.single_submit = a.single_submit;
  aio.overlap_events = a.overlap_events;
  return aio;
}

using core::bad_input;
using core::Error;
using core::io_error;
using swap_detail::kAlign;
using swap_detail::round_up;
using swap_detail::TensorMeta;

Status SwapHandle::wait() const {
  if (!op_) return {};
  return op_->wait();
}

bool SwapHandle::ready() const {
  if (!op_) return true;
  return op_->done_flag.load(std::memory_order_acquire);
}

Swapper::Swapper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Swapper::~Swapper() {
  (void)wait_all();
  if (!impl_->o.keep_files) {
    std::lock_guard<std::mutex> lk(impl_->rec_mu);
    for (auto& [name, r] : impl_->records)
      for (auto& f : r.meta.files)
        if (!f.empty()) (void)impl_->env->remove(f);
  }
  impl_.reset();  // stops the I/O threads before the pool goes
}

SwapperOptions zero_copy_swapper_options(std::vector<std::string> paths, const AioConfig& aio, int64_t chunk_bytes) {
  SwapperOptions so;
  so.paths = std::move(paths);
  so.aio = aio;
  const int64_t chunk = std::max<int64_t>(4096, (chunk_bytes > 0 ? chunk_bytes : aio.block_size) / 4096 * 4096);
  so.buffer_bytes = chunk;
  so.aio.block_size = chunk;
  so.buffer_count = 1;
  return so;
}

Result<std::unique_ptr<Swapper>> Swapper::create(SwapperOptions o, IoEnv* env) {
  if (!env) env = default_io_env();
  const auto& a = o.aio;
  if (o.paths.empty()) return bad_input("swapper: no nvme path given");
  if (a.block_size < kAlign || a.block_size % kAlign != 0)
    return bad_input("aio.block_size " + std::to_string(a.block_size) + " must be a positive multiple of 4096");
  if (a.queue_depth < 1 || a.queue_depth > 65536)
    return bad_input("aio.queue_depth " + std::to_string(a.queue_depth) + " must be in [1, 65536]");
  if (a.intra_op_parallelism < 1 || a.intra_op_parallelism > 256)
    return bad_input("aio.intra_op_parallelism " + std::to_string(a.intra_op_parallelism) + " must be in [1, 256]");
  if (o.buffer_count < 1) return bad_input("swapper: buffer_count " + std::to_string(o.buffer_count) + " must be >= 1");
  if (o.buffer_bytes < 1) return bad_input("swapper: buffer_bytes must be positive");

  auto impl = std::make_unique<Impl>();
  for (auto& p : o.paths) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (p.empty()) return bad_input("swapper: empty nvme path");
  }
  impl->chunk_bytes = round_up(std::max(o.buffer_bytes, a.block_size), a.block_size);
  impl->env = env;
  for (const auto& p : o.paths) {
    auto r = env->probe_dir(p);
    if (!r)
      return bad_input("nvme path '" + p + "' is not usable: " + r.error().message +
                       " (it must be an existing directory we can create files in)");
    const bool d = o.direct && r->direct;
    impl->direct.push_back(d);
    if (d) impl->memory_alignment = std::max(impl->memory_alignment, r->memory_alignment);
    if (o.direct && !r->direct)
      impl->warnings.push_back("nvme path '" + p + "' (" + filesystem_type(p) +
                               ") does not support O_DIRECT: using buffered I/O through the page cache");
    else if (filesystem_type(p) == "tmpfs")
      impl->warnings.push_back("nvme path '" + p +
                               "' is tmpfs: swapped tensors stay in RAM and its bandwidth is memory's");
  }
  auto pool = PinnedBuffer::allocate(impl->chunk_bytes * o.buffer_count, o.lock_memory);
  if (!pool) return pool.error();
  impl->pool = std::move(*pool);
  if (o.lock_memory && !impl->pool.locked()) impl->warnings.push_back(impl->pool.lock_error());
  for (int i = 0; i < o.buffer_count; ++i) impl->free_bufs.push_back(impl->pool.data() + i * impl->chunk_bytes);
  o.buffer_bytes = impl->chunk_bytes;
  impl->o = std::move(o);
  for (int t = 0; t < impl->o.aio.intra_op_parallelism; ++t) {
    auto w = std::make_unique<Worker>();
    auto q = env->make_queue(impl->o.aio.queue_depth);
    if (!q) return q.error();
    w->queue = std::move(*q);
    impl->workers.push_back(std::move(w));
  }
  Impl* ip = impl.get();
  impl->copier = std::thread([ip] {
    set_thread_name("zs-swap-copy");
    ip->copier_loop();
  });
  for (auto& w : impl->workers) {
    Worker* wp = w.get();
    w->thread = std::thread([ip, wp] {
      set_thread_name("zs-swap-io");
      ip->worker_loop(*wp);
    });
  }
  return std::unique_ptr<Swapper>(new Swapper(std::move(impl)));
}

Result<SwapHandle> Swapper::swap_out(const std::string& name, const void* data, int64_t bytes, SourceUse use) {
  Impl& m = *impl_;
  ZS_TRY(m.check_name("swap_out", name, data, bytes));
  m.wait_previous(name);

  auto op = std::make_shared<Op>();
  op->tensor = name;
  op->write = true;
  TensorMeta& meta = op->meta;
  meta.bytes = bytes;
  meta.padded = round_up(bytes, kAlign);
  meta.file_bytes = m.file_sizes(meta.padded);
  const int P = m.paths();
  meta.files.assign(static_cast<size_t>(P), "");
  op->files.resize(static_cast<size_t>(P));
  op->fds.assign(static_cast<size_t>(P), -1);
  for (int p = 0; p < P; ++p) op->files[static_cast<size_t>(p)] = m.file_name(name, p);

  std::vector<std::string> stale;  // files of a larger earlier version this one no longer uses
  {
    std::lock_guard<std::mutex> lk(m.rec_mu);
    Record& r = m.records[name];
    for (size_t p = 0; p < r.meta.files.size(); ++p)
      if (!r.meta.files[p].empty() && meta.file_bytes[p] == 0) stale.push_back(r.meta.files[p]);
    r.meta.valid = false;  // from here until the write completes, the disk copy is not trustworthy
    r.meta.last_error = "a swap_out did not complete";
    r.meta.files.assign(static_cast<size_t>(P), "");  // the files this write creates, so cleanup finds them
    for (int p = 0; p < P; ++p)
      if (meta.file_bytes[static_cast<size_t>(p)] > 0)
        r.meta.files[static_cast<size_t>(p)] = op->files[static_cast<size_t>(p)];
    r.last = op;
  }
  for (auto& f : stale) (void)m.env->remove(f);

  auto fail_early = [&](Error e) -> Result<SwapHandle> {
    m.close_fds(*op);
    std::lock_guard<std::mutex> lk(m.rec_mu);
    Record& r = m.records[name];
    r.meta.valid = false;
    r.meta.last_error = e.message;
    {
      std::lock_guard<std::mutex> lk2(op->mu);
      op->error = e;
      op->mark_done();
    }
    op->cv.notify_all();
    return e;
  };

  for (int p = 0; p < P; ++p) {
    const auto sp = static_cast<size_t>(p);
    if (meta.file_bytes[sp] == 0) continue;
    meta.files[sp] = op->files[sp];
    auto fd = m.env->open(op->files[sp], Access::write, m.direct[sp]);
    if (!fd)
      return fail_early(io_error("swap_out of tensor '" + name + "': cannot open " + op->files[sp] +
                                 " for writing: " + fd.error().message));
    op->fds[sp] = *fd;
    Status s = m.env->allocate(*fd, meta.file_bytes[sp]);
    if (!s.ok())
      return fail_early(io_error("swap_out of tensor '" + name + "': cannot reserve " +
                                 std::to_string(meta.file_bytes[sp]) + " bytes for " + op->files[sp] + ": " +
                                 s.message()));
  }

  const int64_t B = m.chunk_bytes;
  const int64_t chunks = (meta.padded + B - 1) / B;
  if (m.o.checksums) meta.chunk_crc.assign(static_cast<size_t>(chunks), 0);
  const auto* src = static_cast<const unsigned char*>(data);
  for (int64_t ci = 0; ci < chunks; ++ci) {
    auto c = std::make_shared<Chunk>();
    c->op = op;
    c->index = ci;
    c->offset = ci * B;
    c->len = std::min(B, bytes - c->offset);
    c->io_len = std::min(B, meta.padded - c->offset);
    // Zero-copy: a borrowed source aligned as O_DIRECT needs goes to disk as is, except a ragged last page.
    c->pooled = !(use == SourceUse::borrow && c->len == c->io_len && m.aligned(src + c->offset));
    if (op->failed()) {  // an earlier chunk already failed: do not write the rest
      m.chunk_done(op);
      continue;
    }
    if (!c->pooled) {
      c->buf = const_cast<unsigned char*>(src + c->offset);  // only read by the kernel
      m.zero_copy_chunks.fetch_add(1, std::memory_order_relaxed);
      m.dispatch(c);  // the checksum is taken by the copier once the chunk is written (the bytes are borrowed)
      continue;
    }
    c->buf = m.acquire_buffer();
    if (m.o.checksums)
      meta.chunk_crc[static_cast<size_t>(ci)] =
          lane_checksum_copy(c->buf, src + c->offset, static_cast<size_t>(c->len));
    else
      std::memcpy(c->buf, src + c->offset, static_cast<size_t>(c->len));
    std::memset(c->buf + c->len, 0, static_cast<size_t>(c->io_len - c->len));
    m.dispatch(c);
  }
  m.all_submitted(op, chunks);
  return SwapHandle(op);
}

Result<SwapHandle> Swapper::swap_in(const std::string& name, void* data, int64_t bytes) {
  Impl& m = *impl_;
  ZS_TRY(m.check_name("swap_in", name, data, bytes));
  m.wait_previous(name);

  auto op = std::make_shared<Op>();
  op->tensor = name;
  op->write = false;
  op->dst = static_cast<unsigned char*>(data);
  TensorMeta meta;
  {
    std::lock_guard<std::mutex> lk(m.rec_mu);
    auto it = m.records.find(name);
    if (it == m.records.end()) return bad_input("swap_in of tensor '" + name + "': no such tensor was swapped out");
    meta = it->second.meta;
  }
  if (!meta.valid) return io_error("swap_in of tensor '" + name + "': no valid copy on disk: " + meta.last_error);
  if (bytes != meta.bytes)
    return bad_input("swap_in of tensor '" + name + "': asked for " + std::to_string(bytes) + " bytes, it has " +
                     std::to_string(meta.bytes));
  const int P = m.paths();
  op->files = meta.files;
  op->fds.assign(static_cast<size_t>(P), -1);
  if (m.o.checksums) op->expected_crc = meta.chunk_crc;

  for (int p = 0; p < P; ++p) {
    const auto sp = static_cast<size_t>(p);
    if (meta.file_bytes[sp] == 0) continue;
    auto fd = m.env->open(meta.files[sp], Access::read, m.direct[sp]);
    if (!fd) {
      m.close_fds(*op);
      return io_error("swap_in of tensor '" + name + "': cannot open " + meta.files[sp] + ": " + fd.error().message +
                      " (deleted or made unreadable behind our back?)");
    }
    op->fds[sp] = *fd;
    auto size = m.env->file_size(*fd);
    if (!size || *size != meta.file_bytes[sp]) {
      m.close_fds(*op);
      if (!size) return io_error("swap_in of tensor '" + name + "': " + meta.files[sp] + ": " + size.error().message);
      return io_error("swap_in of tensor '" + name + "': " + meta.files[sp] + " is " + std::to_string(*size) +
                      " bytes, expected " + std::to_string(meta.file_bytes[sp]) +
                      ": it was truncated or replaced behind our back");
    }
  }
  {
    std::lock_guard<std::mutex> lk(m.rec_mu);
    m.records[name].last = op;
  }
  const int64_t B = m.chunk_bytes;
  const int64_t chunks = (meta.padded + B - 1) / B;
  for (int64_t ci = 0; ci < chunks; ++ci) {
    auto c = std::make_shared<Chunk>();
    c->op = op;
    c->index = ci;
    c->offset = ci * B;
    c->len = std::min(B, bytes - c->offset);
    c->io_len = std::min(B, meta.padded - c->offset);
    if (op->failed()) {
      m.chunk_done(op);
      continue;
    }
    // Zero-copy: whole pages land straight in a destination aligned as O_DIRECT needs (a gradient run's place
    // in its group's buffer may be 1 KiB-aligned only); a ragged last page uses the pool.
    c->pooled = !(c->len == c->io_len && m.aligned(op->dst + c->offset));
    if (c->pooled) {
      c->buf = m.acquire_buffer();
    } else {
      c->buf = op->dst + c->offset;
      m.zero_copy_chunks.fetch_add(1, std::memory_order_relaxed);
    }
    m.dispatch(c);
  }
  m.all_submitted(op, chunks);
  return SwapHandle(op);
}

Status Swapper::wait_all() {
  std::vector<std::shared_ptr<Op>> ops;
  {
    std::lock_guard<std::mutex> lk(impl_->rec_mu);
    for (auto& [name, r] : impl_->records)
      if (r.last) ops.push_back(r.last);
  }
  Status first;
  for (auto& op : ops) {
    Status s = op->wait();
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status Swapper::remove(const std::string& name) {
  impl_->wait_previous(name);
  std::vector<std::string> files;
  {
    std::lock_guard<std::mutex> lk(impl_->rec_mu);
    auto it = impl_->records.find(name);
    if (it == impl_->records.end()) return bad_input("remove: no tensor named '" + name + "'");
    files = it->second.meta.files;
    impl_->records.erase(it);
  }
  for (auto& f : files) {
    if (f.empty()) continue;
    Status s = impl_->env->remove(f);
    if (!s.ok()) return io_error("remove of tensor '" + name + "': " + f + ": " + s.message());
  }
  return {};
}

bool Swapper::contains(const std::string& name) const {
  std::lock_guard<std::mutex> lk(impl_->rec_mu);
  return impl_->records.count(name) > 0;
}

std::vector<std::string> Swapper::files_of(const std::string& name) const {
  std::lock_guard<std::mutex> lk(impl_->rec_mu);
  std::vector<std::string> out;
  auto it = impl_->records.find(name);
  if (it == impl_->records.end()) return out;
  for (auto& f : it->second.meta.files)
    if (!f.empty()) out.push_back(f);
  return out;
}

const std::vector<std::string>& Swapper::warnings() const { return impl_->warnings; }
const SwapperOptions& Swapper::options() const { return impl_->o; }

SwapperStats Swapper::stats() const {
  SwapperStats s;
  std::lock_guard<std::mutex> lk(impl_->pool_mu);
  s.buffers = impl_->o.buffer_count;
  s.buffers_in_use = impl_->in_use;
  s.peak_buffers_in_use = impl_->peak_in_use;
  s.pool_waits = impl_->pool_waits;
  s.pool_locked = impl_->pool.locked();
  s.bytes_written = impl_->bytes_written.load();
  s.bytes_read = impl_->bytes_read.load();
  s.zero_copy_chunks = impl_->zero_copy_chunks.load();
  return s;
}

}  // namespace zs::exec
