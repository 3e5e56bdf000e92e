// Training data: byte-level tokens (one token per byte, vocab 256) from a file, or a built-in synthetic corpus
// with learnable structure (words of a random lexicon chained by a sparse Markov graph: letters inside a word
// are predictable, each word has three possible successors), and a loader that draws [B, T+1] windows at
// reproducible random offsets; its position and RNG state are part of a checkpoint.
//   Corpus c = synthetic_corpus(1 << 20, /*seed=*/1);        // c.unigram_entropy_nats ≈ 2.9
//   DataLoader dl(c, /*batch=*/4, /*seq=*/64, /*seed=*/1);
//   dl.next(tokens, targets);                                // [B·T] each; targets are tokens shifted by one
// With N data-parallel ranks every rank draws all N·GA micro-batches of a step from its identically seeded loader
// and trains on micro-batches r·GA .. r·GA+GA−1 (Engine::step; docs/ENGINE.md "Several ranks").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace zs::exec {

struct Corpus {
  std::vector<uint8_t> bytes;
  std::string source;               // file path, or "synthetic(seed=1, bytes=1048576)"
  double unigram_entropy_nats = 0;  // of the byte distribution: what a model without context can reach
};

Corpus synthetic_corpus(int64_t bytes, uint64_t seed);
// The file's bytes; it must hold at least min_bytes (one window: seq_len + 1).
core::Result<Corpus> load_corpus_file(const std::string& path, int64_t min_bytes);
double unigram_entropy_nats(const std::vector<uint8_t>& bytes);

struct LoaderState {
  uint64_t rng = 0;     // splitmix64 state
  int64_t batches = 0;  // windows drawn so far / B (the data position)
};

class DataLoader {
 public:
  DataLoader(const Corpus& corpus, int64_t batch, int64_t seq_len, uint64_t seed);
  // B windows: tokens[b·T + t] = w[t], targets[b·T + t] = w[t + 1].
  void next(int32_t* tokens, int32_t* targets);
  LoaderState state() const { return st_; }
  void restore(const LoaderState& s) { st_ = s; }

 private:
  const Corpus* c_;
  int64_t B_, T_;
  LoaderState st_;
};

}  // namespace zs::exec
