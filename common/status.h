// Status and Result<T>: how every fallible call in Poseidon reports failure.
//
// Input from the network, a file or a command line never aborts the process; it becomes a
// Status whose message names the thing, the value and what was expected.
#pragma once

// Of fmt, the core (format strings, fmt::format of the built-in types and strings) is all this
// header needs; <fmt/format.h> cost every unit that includes this one another 0.3 s of GCC (-O2
// and -fsyntax-only alike), and sources that need more of fmt include it themselves.
#include <fmt/core.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace poseidon {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // caller passed something out of range
  kTimeout,          // a deadline passed before the operation completed
  kConnectionError,  // the peer closed, reset, or is unreachable
  kProtocolError,    // the peer sent something that violates the wire protocol
  kAuthError,        // handshake: wrong secret or version
  kIoError,          // local system call failure (files, sockets)
  kUnavailable,      // feature not built in or resource absent (no RDMA device, no GPU)
  kInternal,         // a bug in Poseidon
};

const char* statusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "ConnectionError: peer rank 1 (127.0.0.1:4000) closed the connection"
  std::string toString() const;

  // Adds context in front of the message, keeping the code.
  Status withContext(const std::string& context) const {
    if (isOk()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status makeStatus(StatusCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

// Status of the last failing system call, naming what was attempted.
Status errnoStatus(StatusCode code, const std::string& what);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool isOk() const { return value_.has_value(); }
  explicit operator bool() const { return isOk(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

// Thrown at constructor boundaries and by tools' main(); never from the progress engine.
class StatusError : public std::runtime_error {
 public:
  explicit StatusError(Status status) : std::runtime_error(status.toString()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

}  // namespace poseidon

#define POSEIDON_RETURN_IF_ERROR(expr) \
  do {                                 \
    ::poseidon::Status _st = (expr);   \
    if (!_st.isOk()) return _st;       \
  } while (0)
