#include "core/json_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace zs::core {
namespace {

// nlohmann reports a byte offset; people want line:col.
std::pair<size_t, size_t> line_col(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string describe(const Json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace

Result<Json> parse_json_text(const std::string& text, const std::string& source) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, col] = line_col(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..." → keep the tail.
    auto pos = what.find(": ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    return bad_input(source + ":" + std::to_string(line) + ":" + std::to_string(col) + ": malformed JSON: " + what);
  }
}

Result<Json> read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad_input(path + ": cannot open file: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return io_error(path + ": read failed");
  return parse_json_text(ss.str(), path);
}

Status write_file_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path + ": cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error(path + ": write failed: " + err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return io_error(path + ": fsync/close failed: " + err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return io_error(path + ": rename failed: " + err);
  }
  return {};
}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  // Score by edit distance; a substring match ("prefetch_bucket" in "stage3_prefetch_bucket_size") counts as
  // close. Ties go to the smaller raw distance, so "stage3_prefetch_bucket" suggests the full key, not "stage".
  std::string best;
  std::pair<size_t, size_t> best_score{std::string::npos, std::string::npos};
  for (const auto& c : candidates) {
    const size_t raw = edit_distance(word, c);
    size_t score = raw;
    if (c.find(word) != std::string::npos || word.find(c) != std::string::npos) score = std::min(score, size_t{2});
    if (std::pair{score, raw} < best_score) {
      best_score = {score, raw};
      best = c;
    }
  }
  if (best_score.first == std::string::npos || best_score.first > std::max<size_t>(3, word.size() / 2)) return "";
  return best;
}

ObjectReader::ObjectReader(const Json& j, std::string file, std::string path) : n_(std::make_shared<Node>()) {
  n_->j = &j;
  n_->file = std::move(file);
  n_->path = std::move(path);
  n_->error = std::make_shared<std::optional<Error>>();
  n_->present = true;
  if (!j.is_object()) {
    fail_message(n_->file + ": " + (n_->path.empty() ? std::string("top level") : n_->path) +
                 ": expected a JSON object, got " + describe(j));
    n_->j = nullptr;
  }
}

std::string ObjectReader::key_path(const std::string& key) const {
  return n_->path.empty() ? key : n_->path + "." + key;
}

void ObjectReader::fail_message(const std::string& message) {
  if (!n_->error->has_value()) *n_->error = bad_input(message);
}

void ObjectReader::fail(const std::string& key, const std::string& what) {
  fail_message(n_->file + ": " + key_path(key) + ": " + what);
}

const Json* ObjectReader::find(std::initializer_list<const char*> names, std::string* used) {
  const Json* found = nullptr;
  for (const char* n : names) {
    n_->known.insert(n);
    if (!n_->j || found) continue;
    auto it = n_->j->find(n);
    if (it != n_->j->end()) {
      found = &*it;
      if (used) *used = n;
    }
  }
  return found;
}

bool ObjectReader::has(std::initializer_list<const char*> names) const {
  if (!n_->j) return false;
  for (const char* n : names)
    if (n_->j->contains(n)) return true;
  return false;
}

bool ObjectReader::is_auto(const char* name) const {
  if (!n_->j) return false;
  auto it = n_->j->find(name);
  return it != n_->j->end() && it->is_string() && it->get<std::string>() == "auto";
}

const Json* ObjectReader::raw(std::initializer_list<const char*> names) { return find(names, nullptr); }

void ObjectReader::accept(std::initializer_list<const char*> names) {
  for (const char* n : names) n_->known.insert(n);
}

std::optional<int64_t> ObjectReader::opt_integer(std::initializer_list<const char*> names, int64_t min, int64_t max) {
  std::string key;
  const Json* v = find(names, &key);
  if (!v || v->is_null()) return std::nullopt;
  std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (v->is_boolean() || !v->is_number()) {
    fail(key, describe(*v) + " is not " + range);
    return std::nullopt;
  }
  double d = v->get<double>();
  if (v->is_number_float() && (std::floor(d) != d || !std::isfinite(d))) {
    fail(key, describe(*v) + " is not " + range);
    return std::nullopt;
  }
  if (d < static_cast<double>(min) || d > static_cast<double>(max)) {
    fail(key, describe(*v) + " is out of range: expected " + range);
    return std::nullopt;
  }
  return v->is_number_float() ? static_cast<int64_t>(d) : v->get<int64_t>();
}

int64_t ObjectReader::integer(std::initializer_list<const char*> names, int64_t dflt, int64_t min, int64_t max) {
  return opt_integer(names, min, max).value_or(dflt);
}

std::optional<double> ObjectReader::opt_number(std::initializer_list<const char*> names, double min, double max) {
  std::string key;
  const Json* v = find(names, &key);
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_boolean() || !v->is_number()) {
    fail(key, describe(*v) + " is not a number");
    return std::nullopt;
  }
  double d = v->get<double>();
  if (!(d >= min && d <= max)) {
    std::ostringstream os;
    os << describe(*v) << " is out of range: expected a number in [" << min << ", " << max << "]";
    fail(key, os.str());
    return std::nullopt;
  }
  return d;
}

double ObjectReader::number(std::initializer_list<const char*> names, double dflt, double min, double max) {
  return opt_number(names, min, max).value_or(dflt);
}

std::optional<bool> ObjectReader::opt_boolean(std::initializer_list<const char*> names) {
  std::string key;
  const Json* v = find(names, &key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_boolean()) {
    fail(key, describe(*v) + " is not a boolean (true or false)");
    return std::nullopt;
  }
  return v->get<bool>();
}

bool ObjectReader::boolean(std::initializer_list<const char*> names, bool dflt) {
  return opt_boolean(names).value_or(dflt);
}

std::optional<std::string> ObjectReader::opt_string(std::initializer_list<const char*> names) {
  std::string key;
  const Json* v = find(names, &key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_string()) {
    fail(key, describe(*v) + " is not a string");
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::string ObjectReader::string(std::initializer_list<const char*> names, const std::string& dflt) {
  return opt_string(names).value_or(dflt);
}

std::string ObjectReader::choice(std::initializer_list<const char*> names, const std::string& dflt,
                                 const std::vector<std::string>& allowed) {
  std::string key;
  find(names, &key);
  auto s = opt_string(names);
  if (!s) return dflt;
  if (std::find(allowed.begin(), allowed.end(), *s) != allowed.end()) return *s;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "\"" + *s + "\" is not one of " + list);
  return dflt;
}

int64_t ObjectReader::req_integer(const char* name, int64_t min, int64_t max) {
  if (!has(name))
    fail(name, "missing required key (an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "])");
  return integer({name}, 0, min, max);
}

double ObjectReader::req_number(const char* name, double min, double max) {
  if (!has(name)) fail(name, "missing required key (a number)");
  return number({name}, 0.0, min, max);
}

bool ObjectReader::req_boolean(const char* name) {
  if (!has(name)) fail(name, "missing required key (true or false)");
  return boolean({name}, false);
}

std::string ObjectReader::req_string(const char* name) {
  if (!has(name)) fail(name, "missing required key (a string)");
  return string({name}, "");
}

std::string ObjectReader::req_choice(const char* name, const std::vector<std::string>& allowed) {
  if (!has(name)) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(name, "missing required key (one of " + list + ")");
  }
  return choice({name}, allowed.empty() ? "" : allowed.front(), allowed);
}

ObjectReader ObjectReader::child(const Json* j, const std::string& key) {
  auto n = std::make_shared<Node>();
  n->file = n_->file;
  n->path = key_path(key);
  n->error = n_->error;
  if (j && !j->is_null()) {
    n->present = true;
    if (j->is_object()) {
      n->j = j;
    } else if (!n_->error->has_value()) {
      *n_->error = bad_input(n->file + ": " + n->path + ": expected a JSON object, got " + describe(*j));
    }
  }
  n_->children.push_back(n);
  return ObjectReader(n);
}

ObjectReader ObjectReader::object(std::initializer_list<const char*> names) {
  std::string key = *names.begin();
  const Json* v = find(names, &key);
  return child(v, key);
}

ObjectReader ObjectReader::req_object(const char* name) {
  if (!has(name)) fail(name, "missing required object");
  return object({name});
}

std::vector<std::string> ObjectReader::unknown_keys() const {
  std::vector<std::string> out;
  if (!n_->j) return out;
  for (auto it = n_->j->begin(); it != n_->j->end(); ++it)
    if (!n_->known.count(it.key())) out.push_back(it.key());
  return out;
}

std::vector<ObjectReader::IgnoredKey> ObjectReader::accept_unknown() {
  std::vector<IgnoredKey> out;
  const std::vector<std::string> known(n_->known.begin(), n_->known.end());
  for (const auto& k : unknown_keys()) out.push_back({k, nearest_word(k, known)});
  for (const auto& k : out) n_->known.insert(k.key);
  return out;
}

void ObjectReader::check_unknown(const Node& n) {
  if (n_->error->has_value()) return;
  if (n.j) {
    for (auto it = n.j->begin(); it != n.j->end(); ++it) {
      if (n.known.count(it.key())) continue;
      std::vector<std::string> known(n.known.begin(), n.known.end());
      std::string hint = nearest_word(it.key(), known);
      std::string where = n.path.empty() ? it.key() : n.path + "." + it.key();
      *n_->error = bad_input(n.file + ": " + where + ": unknown key" +
                             (hint.empty() ? std::string("") : "; did you mean \"" + hint + "\"?"));
      return;
    }
  }
  for (const auto& c : n.children) check_unknown(*c);
}

Status ObjectReader::finish() {
  check_unknown(*n_);
  if (n_->error->has_value()) return **n_->error;
  return {};
}

}  // namespace zs::core
