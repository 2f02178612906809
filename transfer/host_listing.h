// list_host_path: the coordinator's reader of a host's fs.list, page by page.
//
// The agent answers fs.list in pages (transfer/chunk_files.h: at most a few
// thousand files, a few MiB, each), so a checkpoint folder of 200,000 shards meets
// no frame cap. This asks for page after page, each after the last path of the one
// before, until the agent says none remain, and hands the caller one listing, all
// pages' files in one FsListReply. A page is the host's word: one whose shape is
// wrong (FsListReply::from_json names the field), whose paths do not come strictly
// after the last page's, or a listing past kMaxListedFiles ends it with an error
// naming `what`.
//
// Every caller of fs.list goes through it (the copy, the remote eval's memory
// check, `ferry hosts check`). Runs on the thread the `call` replies on (the io
// thread); the listing keeps itself alive until `done` has run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "protocol/frame.h"
#include "protocol/ops/fs.h"

namespace ferry {

/// The most files one listing may hold: past it the coordinator's memory, not
/// the frame cap, would be what a host's folder sizes.
inline constexpr int64_t kMaxListedFiles = 2'000'000;

/// Sends one request (op fs.list, these args) to the host's agent.
using ListCall = std::function<void(nlohmann::json args, std::function<void(Result<protocol::Frame>)> reply)>;
using ListDone = std::function<void(Result<protocol::FsListReply> listing)>;

/// Lists `path` on a host through `call`, all pages; `what` ("host:path") names it
/// in every error, the call's own failure too (with its code). `page_files` is the page size asked for (0: the agent's
/// default). `pages`, when given, counts the pages it took.
void list_host_path(const ListCall& call, const std::string& path, const std::string& what, ListDone done,
                    int64_t page_files = 0, int* pages = nullptr);

}  // namespace ferry
