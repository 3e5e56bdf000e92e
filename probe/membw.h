// Host memory bandwidth the way CPU Adam sees it: STREAM triad (a = b + s·c, 24 B per element counted as
// STREAM does) and the Adam access pattern without Adam's arithmetic (read p, g, m, v; write p, m, v:
// 28 B per element), both over the same thread pool and tiles as CpuAdam, so CPU Adam's params/s × 28 B
// divided by the Adam-pattern figure is the fraction of the achievable memory bandwidth it reaches.
//   exec::ThreadPool pool(0);
//   double gbps = adam_pattern_GBps(pool, 64 << 20, /*reps=*/3);
#pragma once

#include <cstdint>

namespace zs::exec {
class ThreadPool;
}  // namespace zs::exec

namespace zs::probe {

// One pass of the Adam pattern over n elements (tile = elements per task, as CpuAdam's tile_elems):
// p += 1e-9·g; m = 0.5·m + g; v = 0.5·v + g (memory-bound; the values stay finite).
void adam_pattern_pass(exec::ThreadPool& pool, float* p, const float* g, float* m, float* v, int64_t n,
                       int64_t tile = 64 * 1024);
// Best of `reps` timed passes over caller-provided arrays (the first pass is a warm-up), in GB/s (1e9 B/s).
double adam_pattern_GBps(exec::ThreadPool& pool, float* p, const float* g, float* m, float* v, int64_t n, int reps);
// Allocates (HostBuffer: huge pages) and first-touches four arrays of n floats, then measures.
double adam_pattern_GBps(exec::ThreadPool& pool, int64_t n, int reps);
// STREAM triad over three arrays of n doubles; best of `reps`, GB/s.
double triad_GBps(exec::ThreadPool& pool, int64_t n, int reps);

// Last-level cache size in bytes from sysfs (0 when unknown), to size arrays well past it.
int64_t last_level_cache_bytes();
// Physical memory in bytes.
int64_t physical_memory_bytes();
// NUMA nodes with memory, from sysfs (/sys/devices/system/node/node*); 1 when the kernel shows none.
int64_t numa_node_count();

}  // namespace zs::probe
