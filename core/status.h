// Status and Result<T>: errors as values (leveldb/cutlass style). Nothing below main() prints or exits;
// a failure travels up as a message that already names the file, JSON path, bad value and what is allowed.
//   Result<ModelSpec> m = load_model("models/gpt2-124m.json");
//   if (!m) { std::cerr << m.error().message << "\n"; return 2; }
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace zs::core {

// Why an operation failed. `bad_input` maps to exit code 2 in the CLI (a user's file or flag is wrong);
// `io` and `internal` are environment or program faults.
enum class ErrorKind { bad_input, io, internal, unsupported };

struct Error {
  ErrorKind kind = ErrorKind::bad_input;
  std::string message;
};

inline Error bad_input(std::string message) { return {ErrorKind::bad_input, std::move(message)}; }
inline Error io_error(std::string message) { return {ErrorKind::io, std::move(message)}; }
inline Error internal_error(std::string message) { return {ErrorKind::internal, std::move(message)}; }

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)), ok_(false) {}  // NOLINT: implicit by design, `return bad_input(...)`
  static Status ok_status() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }
  const std::string& message() const { return error_.message; }

 private:
  Error error_;
  bool ok_ = true;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}    // NOLINT: implicit so functions can `return value;`
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  Result(Status s) : v_(s.error()) {}            // NOLINT: only for failed statuses
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  Status status() const { return ok() ? Status{} : Status{error()}; }

 private:
  std::variant<T, Error> v_;
};

}  // namespace zs::core

// Propagate a failed Status/Result from an expression: ZS_TRY(validate(x));
#define ZS_TRY(expr)                                   \
  do {                                                 \
    auto zs_try_s_ = (expr);                           \
    if (!zs_try_s_.ok()) return zs_try_s_.error();     \
  } while (0)
