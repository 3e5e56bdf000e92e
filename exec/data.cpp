// Corpora and the window loader (data.h).
#include "exec/data.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace zs::exec {
namespace {

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

double unigram_entropy_nats(const std::vector<uint8_t>& bytes) {
  std::array<int64_t, 256> count{};
  for (uint8_t b : bytes) ++count[b];
  double h = 0;
  const double n = static_cast<double>(bytes.size());
  for (int64_t c : count)
    if (c > 0) h -= (static_cast<double>(c) / n) * std::log(static_cast<double>(c) / n);
  return h;
}

Corpus synthetic_corpus(int64_t bytes, uint64_t seed) {
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  constexpr int kWords = 48, kSucc = 3;
  std::vector<std::string> words;
  for (int w = 0; w < kWords; ++w) {
    const int len = 2 + static_cast<int>(splitmix(s) % 6);
    std::string word;
    for (int i = 0; i < len; ++i) word += static_cast<char>('a' + splitmix(s) % 26);
    words.push_back(word);
  }
  std::vector<std::array<int, kSucc>> next(kWords);
  for (auto& n : next)
    for (int& x : n) x = static_cast<int>(splitmix(s) % kWords);
  Corpus c;
  c.bytes.reserve(static_cast<size_t>(bytes));
  int w = 0;
  int64_t in_sentence = 0;
  while (static_cast<int64_t>(c.bytes.size()) < bytes) {
    for (char ch : words[static_cast<size_t>(w)]) c.bytes.push_back(static_cast<uint8_t>(ch));
    // Sentences end after 6..11 words: ". " then a newline every so often.
    if (++in_sentence >= 6 && splitmix(s) % 6 == 0) {
      c.bytes.push_back('.');
      c.bytes.push_back(splitmix(s) % 4 == 0 ? '\n' : ' ');
      in_sentence = 0;
    } else {
      c.bytes.push_back(' ');
    }
    w = next[static_cast<size_t>(w)][splitmix(s) % kSucc];
  }
  c.bytes.resize(static_cast<size_t>(bytes));
  char src[96];
  std::snprintf(src, sizeof src, "synthetic(seed=%llu, bytes=%lld)", static_cast<unsigned long long>(seed),
                static_cast<long long>(bytes));
  c.source = src;
  c.unigram_entropy_nats = unigram_entropy_nats(c.bytes);
  return c;
}

core::Result<Corpus> load_corpus_file(const std::string& path, int64_t min_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return core::bad_input("--data " + path + ": cannot open the file");
  Corpus c;
  c.bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (static_cast<int64_t>(c.bytes.size()) < min_bytes)
    return core::bad_input("--data " + path + ": " + std::to_string(c.bytes.size()) +
                           " bytes is shorter than one training window (" + std::to_string(min_bytes) + " bytes)");
  c.source = path;
  c.unigram_entropy_nats = unigram_entropy_nats(c.bytes);
  return c;
}

DataLoader::DataLoader(const Corpus& corpus, int64_t batch, int64_t seq_len, uint64_t seed)
    : c_(&corpus), B_(batch), T_(seq_len) {
  st_.rng = seed ^ 0xd1b54a32d192ed03ull;
}

void DataLoader::next(int32_t* tokens, int32_t* targets) {
  const auto n = static_cast<uint64_t>(c_->bytes.size());
  const uint64_t span = n - static_cast<uint64_t>(T_);  // offsets 0 .. n - T - 1
  for (int64_t b = 0; b < B_; ++b) {
    const uint64_t off = splitmix(st_.rng) % span;
    for (int64_t t = 0; t < T_; ++t) {
      tokens[b * T_ + t] = c_->bytes[off + static_cast<uint64_t>(t)];
      targets[b * T_ + t] = c_->bytes[off + static_cast<uint64_t>(t) + 1];
    }
  }
  ++st_.batches;
}

}  // namespace zs::exec
