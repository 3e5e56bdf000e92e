// Atomic checkpoint folders (checkpoint.h): temp folder, fsync, rename, fsync; verified loads with fallback.
#include "exec/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/checksum.h"

namespace zs::exec {
namespace {

namespace fs = std::filesystem;
using core::io_error;
using core::Status;

std::string step_name(int64_t step) {
  char b[32];
  std::snprintf(b, sizeof b, "step-%08lld", static_cast<long long>(step));
  return b;
}

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::string err() { return std::strerror(errno); }

Status fsync_path(const std::string& path, bool dir) {
  const int fd = ::open(path.c_str(), (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return io_error("checkpoint: cannot open " + path + " to fsync: " + err());
  const int rc = ::fsync(fd);
  const std::string e = rc != 0 ? err() : "";
  ::close(fd);
  if (rc != 0) return io_error("checkpoint: fsync " + path + ": " + e);
  return {};
}

Status write_all(int fd, const void* data, int64_t n, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, static_cast<size_t>(std::min<int64_t>(n, 1 << 30)));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return io_error("checkpoint: writing " + path + ": " + err());
    p += w;
    n -= w;
  }
  return {};
}

Status write_file(const std::string& path, const std::string& text, bool sync) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("checkpoint: cannot create " + path + ": " + err());
  Status s = write_all(fd, text.data(), static_cast<int64_t>(text.size()), path);
  if (s.ok() && sync && ::fsync(fd) != 0) s = io_error("checkpoint: fsync " + path + ": " + err());
  ::close(fd);
  return s;
}

std::vector<std::string> step_folders(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("step-", 0) == 0 && e.is_directory()) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Status save_checkpoint(const std::string& dir, const CheckpointInfo& info, const std::vector<CheckpointTensor>& tensors,
                       const CheckpointOptions& o) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("checkpoint: cannot create " + dir + ": " + ec.message());
  for (const auto& e : fs::directory_iterator(dir, ec))  // leftovers of a save that was killed
    if (e.path().filename().string().rfind(".tmp-", 0) == 0) fs::remove_all(e.path(), ec);

  const std::string name = step_name(info.step);
  const std::string tmp = dir + "/.tmp-" + name + "." + std::to_string(::getpid());
  if (!fs::create_directory(tmp, ec) || ec) return io_error("checkpoint: cannot create " + tmp + ": " + ec.message());

  nlohmann::ordered_json man;
  man["format"] = "zerosim-checkpoint";
  man["version"] = 1;
  man["step"] = info.step;
  man["state"] = info.state;
  man["data_file"] = "tensors.bin";
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  const std::string bin = tmp + "/tensors.bin";
  const int fd = ::open(bin.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("checkpoint: cannot create " + bin + ": " + err());
  int64_t offset = 0;
  std::vector<unsigned char> staging;
  Status s;
  for (const auto& t : tensors) {
    staging.resize(static_cast<size_t>(t.bytes));
    if (t.fill) s = t.fill(staging.data());
    if (!s.ok()) break;
    const uint32_t crc = crc32c(staging.data(), staging.size(), 0);
    s = write_all(fd, staging.data(), t.bytes, bin);
    if (!s.ok()) break;
    list.push_back({{"name", t.name},
                    {"dtype", t.dtype},
                    {"numel", t.numel},
                    {"offset", offset},
                    {"bytes", t.bytes},
                    {"crc32c", hex32(crc)}});
    offset += t.bytes;
  }
  if (s.ok() && o.fsync && ::fsync(fd) != 0) s = io_error("checkpoint: fsync " + bin + ": " + err());
  ::close(fd);
  man["total_bytes"] = offset;
  man["tensors"] = std::move(list);
  if (s.ok()) s = write_file(tmp + "/manifest.json", man.dump(1) + "\n", o.fsync);
  if (s.ok() && o.fsync) s = fsync_path(tmp, true);
  if (!s.ok()) {
    fs::remove_all(tmp, ec);
    return s;
  }
  // Into place. Re-saving a step moves the old folder aside first (a folder cannot be renamed over a full one).
  const std::string final_path = dir + "/" + name;
  const std::string old = dir + "/.tmp-old-" + name;
  if (fs::exists(final_path, ec)) fs::rename(final_path, old, ec);
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const std::string e = err();
    fs::remove_all(tmp, ec);
    return io_error("checkpoint: rename " + tmp + " → " + final_path + ": " + e);
  }
  if (o.fsync) ZS_TRY(fsync_path(dir, true));
  const std::string latest_tmp = dir + "/.tmp-latest." + std::to_string(::getpid());
  ZS_TRY(write_file(latest_tmp, name + "\n", o.fsync));
  if (::rename(latest_tmp.c_str(), (dir + "/latest").c_str()) != 0)
    return io_error("checkpoint: rename " + latest_tmp + " → " + dir + "/latest: " + err());
  if (o.fsync) ZS_TRY(fsync_path(dir, true));
  fs::remove_all(old, ec);
  auto steps = step_folders(dir);
  for (size_t i = 0; i + static_cast<size_t>(std::max(1, o.keep)) < steps.size(); ++i)
    if (steps[i] != name) fs::remove_all(dir + "/" + steps[i], ec);
  return {};
}

int64_t Checkpoint::bytes_of(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second.bytes;
}

Status Checkpoint::read(const std::string& name, void* dst, int64_t bytes) const {
  auto it = index_.find(name);
  if (it == index_.end()) return core::bad_input("checkpoint " + path_ + ": no tensor '" + name + "'");
  if (it->second.bytes != bytes)
    return core::bad_input("checkpoint " + path_ + ": tensor '" + name + "' has " + std::to_string(it->second.bytes) +
                           " bytes, the model needs " + std::to_string(bytes) +
                           " (a checkpoint of another model or configuration?)");
  const std::string bin = path_ + "/tensors.bin";
  const int fd = ::open(bin.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("checkpoint: cannot open " + bin + ": " + err());
  auto* p = static_cast<char*>(dst);
  int64_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd, p + done, static_cast<size_t>(bytes - done), it->second.offset + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ::close(fd);
      return io_error("checkpoint: " + bin + " is truncated at tensor '" + name + "'");
    }
    done += r;
  }
  ::close(fd);
  const uint32_t crc = crc32c(dst, static_cast<size_t>(bytes), 0);
  if (crc != it->second.crc)
    return io_error("checkpoint: tensor '" + name + "' in " + bin + " fails its checksum (" + hex32(crc) +
                    ", manifest " + hex32(it->second.crc) + ")");
  return {};
}

core::Result<Checkpoint> open_step_folder(const std::string& folder) {
  std::ifstream f(folder + "/manifest.json");
  if (!f) return io_error("checkpoint: " + folder + "/manifest.json is missing");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json man = nlohmann::json::parse(ss.str(), nullptr, false);
  if (man.is_discarded() || !man.is_object() || man.value("format", "") != "zerosim-checkpoint")
    return io_error("checkpoint: " + folder + "/manifest.json is not a zerosim checkpoint manifest");
  Checkpoint c;
  c.path_ = folder;
  c.info_.step = man.value("step", int64_t{-1});
  c.info_.state = man.value("state", nlohmann::json::object());
  const std::string bin = folder + "/tensors.bin";
  struct stat st {};
  if (::stat(bin.c_str(), &st) != 0) return io_error("checkpoint: " + bin + " is missing");
  if (st.st_size != man.value("total_bytes", int64_t{-1}))
    return io_error("checkpoint: " + bin + " has " + std::to_string(st.st_size) + " bytes, the manifest says " +
                    std::to_string(man.value("total_bytes", int64_t{-1})));
  std::vector<unsigned char> buf;
  for (const auto& t : man.value("tensors", nlohmann::json::array())) {
    Checkpoint::Entry e;
    e.offset = t.value("offset", int64_t{0});
    e.bytes = t.value("bytes", int64_t{0});
    e.crc = static_cast<uint32_t>(std::stoul(t.value("crc32c", std::string("0")), nullptr, 16));
    c.index_[t.value("name", std::string())] = e;
    buf.resize(static_cast<size_t>(e.bytes));
    ZS_TRY(c.read(t.value("name", std::string()), buf.data(), e.bytes));
  }
  return c;
}

core::Result<Checkpoint> open_checkpoint(const std::string& dir) {
  std::string named;
  {
    std::ifstream f(dir + "/latest");
    if (f) std::getline(f, named);
  }
  std::string why;
  if (!named.empty()) {
    auto c = open_step_folder(dir + "/" + named);
    if (c) return c;
    why = c.error().message;
  } else {
    why = dir + "/latest is missing or empty";
  }
  auto steps = step_folders(dir);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (*it == named) continue;
    auto c = open_step_folder(dir + "/" + *it);
    if (c) {
      c->note_ = "loaded " + *it + " because " + why;
      return c;
    }
  }
  return io_error("checkpoint: no loadable checkpoint in " + dir + " (" + why + ")");
}

}  // namespace zs::exec
