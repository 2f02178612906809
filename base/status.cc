#include "base/status.h"

#include <cstring>

namespace ferry {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kAlreadyExists: return "already exists";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kDeadlineExceeded: return "deadline exceeded";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kDataLoss: return "data loss";
    case StatusCode::kPermissionDenied: return "permission denied";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

Status errno_status(const std::string& what, int err) {
  StatusCode code = StatusCode::kInternal;
  if (err == ENOENT) code = StatusCode::kNotFound;
  if (err == EACCES || err == EPERM) code = StatusCode::kPermissionDenied;
  if (err == EEXIST) code = StatusCode::kAlreadyExists;
  return Status(code, what + ": " + std::strerror(err));
}

}  // namespace ferry
