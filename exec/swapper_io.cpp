// The Swapper's machinery: I/O threads (libaio through IoEnv), completions, the copier thread, and the
// bookkeeping that ends an operation. The public calls are in swapper.cpp; the shared state in swapper_impl.h.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_set>

#include "exec/checksum.h"
#include "exec/swapper_impl.h"

namespace zs::exec {

using core::bad_input;
using core::io_error;

namespace swap_detail {

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::string escape_name(const std::string& name) {
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  return out;
}

}  // namespace swap_detail

using swap_detail::escape_name;
using swap_detail::hex32;

Swapper::Impl::~Impl() {
  for (auto& w : workers) {
    {
      std::lock_guard<std::mutex> lk(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
  }
  for (auto& w : workers)
    if (w->thread.joinable()) w->thread.join();
  {
    std::lock_guard<std::mutex> lk(copy_mu);
    copy_stop = true;
  }
  copy_cv.notify_all();
  if (copier.joinable()) copier.join();
}

void Swapper::Impl::copier_loop() {
  for (;;) {
    std::shared_ptr<Chunk> c;
    (void)spin_until([&] { return copy_queued.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock<std::mutex> lk(copy_mu);
      copy_cv.wait(lk, [&] { return copy_stop || !copy_q.empty(); });
      if (copy_q.empty()) return;
      c = std::move(copy_q.front());
      copy_q.pop_front();
      copy_queued.fetch_sub(1, std::memory_order_relaxed);
    }
    copy_out(c);
  }
}

unsigned char* Swapper::Impl::acquire_buffer() {
  std::unique_lock<std::mutex> lk(pool_mu);
  if (free_bufs.empty()) {
    ++pool_waits;
    pool_cv.wait(lk, [&] { return !free_bufs.empty(); });
  }
  unsigned char* b = free_bufs.back();
  free_bufs.pop_back();
  peak_in_use = std::max(peak_in_use, ++in_use);
  return b;
}

void Swapper::Impl::release_buffer(unsigned char* b) {
  {
    std::lock_guard<std::mutex> lk(pool_mu);
    free_bufs.push_back(b);
    --in_use;
  }
  pool_cv.notify_one();
}

void Swapper::Impl::locate(int64_t tensor_offset, int* path, int64_t* file_offset) const {
  const int64_t bs = o.aio.block_size;
  const int64_t u = tensor_offset / bs;
  *path = static_cast<int>(u % paths());
  *file_offset = (u / paths()) * bs + tensor_offset % bs;
}

std::vector<int64_t> Swapper::Impl::file_sizes(int64_t padded) const {
  const int64_t bs = o.aio.block_size;
  const int P = paths();
  std::vector<int64_t> sizes(static_cast<size_t>(P), 0);
  const int64_t units = (padded + bs - 1) / bs;
  for (int p = 0; p < P; ++p) {
    const int64_t count = units > p ? (units - p + P - 1) / P : 0;
    sizes[static_cast<size_t>(p)] = count * bs;
  }
  if (units > 0) {
    const int64_t last_len = padded - (units - 1) * bs;
    sizes[static_cast<size_t>((units - 1) % P)] -= bs - last_len;
  }
  return sizes;
}

std::string Swapper::Impl::file_name(const std::string& tensor, int p) const {
  std::string base = o.paths[static_cast<size_t>(p)] + "/" + escape_name(tensor);
  if (paths() == 1) return base + ".swp";
  return base + "." + std::to_string(p) + "of" + std::to_string(paths()) + ".swp";
}

std::string Swapper::Impl::chunk_files(const Chunk& c) const {
  std::set<int> ps;
  for (int64_t x = c.offset; x < c.offset + c.io_len && static_cast<int>(ps.size()) < paths(); x += o.aio.block_size) {
    int p;
    int64_t fo;
    locate(x, &p, &fo);
    ps.insert(p);
  }
  std::string s;
  for (int p : ps) s += (s.empty() ? "" : ", ") + c.op->files[static_cast<size_t>(p)];
  return s;
}

void Swapper::Impl::wait_previous(const std::string& name) {
  for (;;) {
    std::shared_ptr<Op> last;
    {
      std::lock_guard<std::mutex> lk(rec_mu);
      auto it = records.find(name);
      if (it == records.end() || !it->second.last) return;
      last = it->second.last;
    }
    {
      std::lock_guard<std::mutex> lk(last->mu);
      if (last->done) return;
    }
    (void)last->wait();
  }
}

void Swapper::Impl::close_fds(Op& op) {
  for (int& fd : op.fds) {
    if (fd >= 0) env->close(fd);
    fd = -1;
  }
}

void Swapper::Impl::complete(const std::shared_ptr<Op>& op) {
  close_fds(*op);
  if (op->write) {
    std::lock_guard<std::mutex> lk(rec_mu);
    auto it = records.find(op->tensor);
    if (it != records.end() && it->second.last == op) {
      it->second.meta = std::move(op->meta);
      std::lock_guard<std::mutex> lk2(op->mu);
      it->second.meta.valid = !op->error;
      it->second.meta.last_error = op->error ? op->error->message : "";
    }
  }
  {
    std::lock_guard<std::mutex> lk(op->mu);
    op->mark_done();
  }
  op->cv.notify_all();
}

void Swapper::Impl::chunk_done(const std::shared_ptr<Op>& op) {
  bool finish = false;
  {
    std::lock_guard<std::mutex> lk(op->mu);
    ++op->chunks_done;
    if (op->chunks_total >= 0 && op->chunks_done == op->chunks_total && !op->finishing) finish = op->finishing = true;
  }
  if (finish) complete(op);
}

void Swapper::Impl::all_submitted(const std::shared_ptr<Op>& op, int64_t chunks) {
  bool finish = false;
  {
    std::lock_guard<std::mutex> lk(op->mu);
    op->chunks_total = chunks;
    if (op->chunks_done == chunks && !op->finishing) finish = op->finishing = true;
  }
  if (finish) complete(op);
}

void Swapper::Impl::finish_chunk(const std::shared_ptr<Chunk>& c) {
  const Op& op = *c->op;
  // Reads need a copy out and/or a verification; borrowed writes need their checksum. Both go to the copier,
  // which paces that CPU work with the I/O instead of competing with it up front.
  const bool cpu_work = op.write ? (!c->pooled && !op.meta.chunk_crc.empty()) : (c->pooled || !op.expected_crc.empty());
  if (!c->failed.load() && cpu_work) {
    {
      std::lock_guard<std::mutex> lk(copy_mu);
      copy_q.push_back(c);
      copy_queued.fetch_add(1, std::memory_order_release);
    }
    copy_cv.notify_one();
    return;
  }
  if (c->pooled) release_buffer(c->buf);
  chunk_done(c->op);
}

void Swapper::Impl::copy_out(const std::shared_ptr<Chunk>& c) {
  Op& op = *c->op;
  if (op.write) {  // a borrowed chunk, already on disk: its checksum, from the memory it was written from
    op.meta.chunk_crc[static_cast<size_t>(c->index)] = lane_checksum(c->buf, static_cast<size_t>(c->len));
  } else {
    unsigned char* dst = op.dst + c->offset;
    if (!op.expected_crc.empty()) {
      const uint32_t got = c->pooled ? lane_checksum_copy(dst, c->buf, static_cast<size_t>(c->len))
                                     : lane_checksum(dst, static_cast<size_t>(c->len));  // read in place
      const uint32_t want = op.expected_crc[static_cast<size_t>(c->index)];
      if (got != want)
        op.fail(io_error("swap_in of tensor '" + op.tensor + "': checksum mismatch in bytes [" +
                         std::to_string(c->offset) + ", " + std::to_string(c->offset + c->len) + ") read from " +
                         chunk_files(*c) + ": checksum " + hex32(got) + ", written " + hex32(want) +
                         "; the file was changed behind our back or the disk returned bad data"));
    } else {
      std::memcpy(dst, c->buf, static_cast<size_t>(c->len));
    }
  }
  if (c->pooled) release_buffer(c->buf);
  chunk_done(c->op);
}

void Swapper::Impl::block_done(BlockIo* b, int64_t result) {
  Chunk& c = *b->chunk;
  Op& op = *c.op;
  if (result != b->len) {
    c.failed = true;
    const std::string& file = op.files[static_cast<size_t>(b->path)];
    const std::string where =
        std::to_string(b->len) + " bytes at offset " + std::to_string(b->file_offset) + " of file " + file;
    std::string msg = std::string(op.verb()) + " of tensor '" + op.tensor + "': ";
    if (result < 0) {
      msg += std::string(op.write ? "write of " : "read of ") + where +
             " failed: " + std::strerror(static_cast<int>(-result));
    } else if (op.write) {
      msg += "short write: " + std::to_string(result) + " of " + where + " (disk full?)";
    } else {
      msg += "short read: " + std::to_string(result) + " of " + where + " (the file was truncated behind our back?)";
    }
    op.fail(io_error(msg));
  } else {
    (op.write ? bytes_written : bytes_read).fetch_add(result, std::memory_order_relaxed);
  }
  std::shared_ptr<Chunk> keep = b->chunk;
  delete b;
  if (keep->pending.fetch_sub(1) == 1) finish_chunk(keep);
}

void Swapper::Impl::worker_loop(Worker& w) {
  const int qd = o.aio.queue_depth;
  const int64_t bs = o.aio.block_size;
  std::vector<IoRequest> batch;
  std::vector<IoCompletion> done(static_cast<size_t>(qd));
  std::unordered_set<BlockIo*> inflight;
  Job cur;
  bool have = false;
  for (;;) {
    batch.clear();
    const bool may_fill = o.aio.overlap_events || inflight.empty();
    while (may_fill && static_cast<int>(inflight.size() + batch.size()) < qd) {
      if (!have || cur.next == cur.end) {
        if (inflight.empty() && batch.empty())  // about to sleep: poll for the next job a moment first
          (void)spin_until([&] { return w.queued.load(std::memory_order_acquire) > 0; });
        std::unique_lock<std::mutex> lk(w.mu);
        if (w.jobs.empty()) {
          if (!inflight.empty() || !batch.empty()) break;  // never sleep with I/O outstanding
          w.cv.wait(lk, [&] { return w.stop || !w.jobs.empty(); });
          if (w.jobs.empty()) return;  // stopped, nothing left
        }
        cur = std::move(w.jobs.front());
        w.jobs.pop_front();
        w.queued.fetch_sub(1, std::memory_order_relaxed);
        have = true;
        continue;
      }
      const int64_t k = cur.next++;
      Chunk& c = *cur.chunk;
      auto* b = new BlockIo{cur.chunk, 0, 0, std::min(bs, c.io_len - k * bs)};
      locate(c.offset + k * bs, &b->path, &b->file_offset);
      batch.push_back({c.op->fds[static_cast<size_t>(b->path)], c.op->write, b->file_offset, c.buf + k * bs, b->len,
                       reinterpret_cast<uint64_t>(b)});
    }
    // Submit: one io_submit for the batch, or one per iocb (single_submit).
    size_t sent = 0;
    Status s;
    if (o.aio.single_submit) {
      for (; sent < batch.size(); ++sent) {
        s = w.queue->submit(std::span<const IoRequest>(&batch[sent], 1));
        if (!s.ok()) break;
        inflight.insert(reinterpret_cast<BlockIo*>(batch[sent].tag));
      }
    } else if (!batch.empty()) {
      s = w.queue->submit(batch);
      if (s.ok()) {
        for (auto& r : batch) inflight.insert(reinterpret_cast<BlockIo*>(r.tag));
        sent = batch.size();
      }
    }
    for (size_t i = sent; i < batch.size(); ++i) {
      auto* b = reinterpret_cast<BlockIo*>(batch[i].tag);
      b->chunk->op->fail(io_error(std::string(b->chunk->op->verb()) + " of tensor '" + b->chunk->op->tensor + "': " +
                                  s.message() + " (file " + b->chunk->op->files[static_cast<size_t>(b->path)] + ")"));
      block_done(b, -EIO);
    }
    if (inflight.empty()) continue;
    // Reap: sliding window waits for one completion; sequential mode waits for the whole batch.
    // Polled first (reap(0) does not block), then blocking: the completion's wake-up onto an idle vCPU is what
    // a small swap would otherwise pay. Partial completions are handled and the loop comes back for the rest.
    const int min_n = o.aio.overlap_events ? 1 : static_cast<int>(inflight.size());
    const std::span<IoCompletion> out(done.data(), inflight.size());
    Result<int> got = 0;
    (void)spin_until([&] {
      got = w.queue->reap(0, out);
      return !got || *got > 0;
    });
    if (got && *got == 0) got = w.queue->reap(min_n, out);
    if (!got) {
      for (BlockIo* b : inflight) {
        b->chunk->op->fail(io_error(std::string(b->chunk->op->verb()) + " of tensor '" + b->chunk->op->tensor +
                                    "': " + got.error().message));
        block_done(b, -EIO);
      }
      inflight.clear();
      continue;
    }
    for (int i = 0; i < *got; ++i) {
      auto* b = reinterpret_cast<BlockIo*>(done[static_cast<size_t>(i)].tag);
      inflight.erase(b);
      block_done(b, done[static_cast<size_t>(i)].result);
    }
  }
}

void Swapper::Impl::dispatch(const std::shared_ptr<Chunk>& c) {
  const int64_t bs = o.aio.block_size;
  const int64_t blocks = (c->io_len + bs - 1) / bs;
  const int64_t W = static_cast<int64_t>(workers.size());
  c->pending = blocks;
  for (int64_t t = 0; t < W; ++t) {
    const int64_t k0 = t * blocks / W, k1 = (t + 1) * blocks / W;
    if (k1 <= k0) continue;
    Worker& w = *workers[static_cast<size_t>(t)];
    {
      std::lock_guard<std::mutex> lk(w.mu);
      w.jobs.push_back({c, k0, k1});
      w.queued.fetch_add(1, std::memory_order_release);
    }
    w.cv.notify_one();
  }
}

Status Swapper::Impl::check_name(const char* verb, const std::string& name, const void* data, int64_t bytes) const {
  if (name.empty()) return bad_input(std::string(verb) + ": tensor name must not be empty");
  if (bytes < 0)
    return bad_input(std::string(verb) + " of tensor '" + name + "': negative size " + std::to_string(bytes));
  if (bytes > 0 && !data) return bad_input(std::string(verb) + " of tensor '" + name + "': null data pointer");
  return {};
}

}  // namespace zs::exec
