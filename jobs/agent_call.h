// A runner's typed call of an agent op: the request struct names its op and its
// reply (protocol/ops/*.h: Args::kOp, Args::Reply), so one op's arguments cannot go
// out under another's name, and `fn` gets the reply read through its field list, or
// why not: the call's failure (transient_link_failure says whether to retry it), or
// the reply's bad field named (kInvalidArgument). For the ops whose reply carries a
// body (fs.read, log.read) the caller keeps StageEnv's frame. Io thread, as StageEnv.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "jobs/stage_runner.h"

namespace ferry {

template <typename Args>
using ReplyHandler = std::function<void(Result<typename Args::Reply>)>;

/// The frame handler that reads Args's reply and hands it to `fn`.
template <typename Args>
ReplyFn read_reply_of(ReplyHandler<Args> fn) {
  return [fn = std::move(fn)](Result<protocol::Frame> r) { fn(protocol::reply_of<typename Args::Reply>(r)); };
}

/// `args`'s op on `host`'s agent, over the connection StageEnv::call_agent uses.
template <typename Args>
void call_op(StageEnv& env, const std::string& host, const Args& args, ReplyHandler<Args> fn) {
  env.call_agent(host, Args::kOp, args.to_json(), read_reply_of<Args>(std::move(fn)));
}

/// The same over lane `lane` (StageEnv::call_agent_lane), `body` riding as the frame's bytes.
template <typename Args>
void call_op_lane(StageEnv& env, const std::string& host, int lane, const Args& args, std::string body,
                  ReplyHandler<Args> fn) {
  env.call_agent_lane(host, lane, Args::kOp, args.to_json(), std::move(body), read_reply_of<Args>(std::move(fn)));
}

}  // namespace ferry
