// An op's request and reply read through their field lists (base/json_fields.h),
// exactly, with errors that name the op and the field ("the job.start request's
// timeout_s is a string, not a number"). Header-only; any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/json_field_writer.h"
#include "base/json_fields.h"
#include "base/status.h"

namespace ferry::protocol {

/// A request's header also names its op, which the dispatcher reads itself.
template <typename T, typename Fields>
Result<T> request_from_json(const nlohmann::json& header, const char* op, Fields fields) {
  return exact_fields_from_json<T>(header, std::string("the ") + op + " request", fields, {"op"});
}

/// `what`: the reply's name in messages ("the job.start reply", "the job record").
template <typename T, typename Fields>
Result<T> reply_from_json(const nlohmann::json& header, const std::string& what, Fields fields) {
  return exact_fields_from_json<T>(header, what, fields);
}

/// A reply read as reply_from_json does, except that a field the list does not name
/// is skipped: for the replies that describe a host (host.info, slurm.info), which
/// coordinators have always read whatever else the agent says, so an agent of
/// another build that says more of its host is still read.
template <typename T, typename Fields>
Result<T> open_reply_from_json(const nlohmann::json& header, const std::string& what, Fields fields) {
  return fields_from_json<T>(header, what, fields);
}

}  // namespace ferry::protocol

/// Defines T::to_json() and T::from_json() of request T over its field list; errors
/// name "the <op> request" (T::kOp).
#define FERRY_REQUEST_JSON(T, fields)                                               \
  nlohmann::json T::to_json() const { return ::ferry::fields_json(*this, fields); } \
  ::ferry::Result<T> T::from_json(const nlohmann::json& j) {                        \
    return ::ferry::protocol::request_from_json<T>(j, T::kOp, fields);              \
  }

/// The same for reply (or record) T; `what` names it in errors ("the job.start reply").
#define FERRY_REPLY_JSON(T, what, fields)                                           \
  nlohmann::json T::to_json() const { return ::ferry::fields_json(*this, fields); } \
  ::ferry::Result<T> T::from_json(const nlohmann::json& j) {                        \
    return ::ferry::protocol::reply_from_json<T>(j, what, fields);                  \
  }

/// The same for a reply read with open_reply_from_json (unknown fields skipped).
#define FERRY_OPEN_REPLY_JSON(T, what, fields)                                      \
  nlohmann::json T::to_json() const { return ::ferry::fields_json(*this, fields); } \
  ::ferry::Result<T> T::from_json(const nlohmann::json& j) {                        \
    return ::ferry::protocol::open_reply_from_json<T>(j, what, fields);             \
  }
