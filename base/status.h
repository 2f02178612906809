// Status and Result<T>: the error values passed between ferry's own modules.
//
// A Status is a code plus a human message that names the thing and the place
// ("dflash.yaml:12:5: stage 'eval' needs unknown stage 'copy-ckpt'"). Third-party
// exceptions are caught in their adapter file and turned into a Status there.
// Plain values; any thread.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace ferry {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input: workflow, frame, checkpoint, flag
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,  // e.g. a stale attempt token
  kUnavailable,         // a host or link is down; worth retrying
  kDeadlineExceeded,
  kCancelled,
  kDataLoss,  // hash mismatch, truncated file
  kPermissionDenied,  // host key refused, auth failed
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// "code: message", for logs.
  std::string to_string() const;

  /// A copy whose message is "prefix: message"; keeps the code.
  Status with_context(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status not_found(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status failed_precondition(std::string m) { return Status(StatusCode::kFailedPrecondition, std::move(m)); }
inline Status unavailable(std::string m) { return Status(StatusCode::kUnavailable, std::move(m)); }
inline Status data_loss(std::string m) { return Status(StatusCode::kDataLoss, std::move(m)); }
inline Status internal_error(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status permission_denied(std::string m) { return Status(StatusCode::kPermissionDenied, std::move(m)); }
inline Status cancelled(std::string m) { return Status(StatusCode::kCancelled, std::move(m)); }
/// errno-based failure: "what: strerror(errno)".
Status errno_status(const std::string& what, int err);

/// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(runtime/explicit)
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ferry

#define FERRY_RETURN_IF_ERROR(expr)            \
  do {                                         \
    ::ferry::Status ferry_status_ = (expr);    \
    if (!ferry_status_.ok()) return ferry_status_; \
  } while (0)
