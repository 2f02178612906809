#include "protocol/ops/fs.h"

#include "protocol/ops/message_fields.h"

namespace ferry::protocol {
namespace {

// Both directions of each message (base/json_field_writer.h, base/json_fields.h).
constexpr auto fs_stat_fields = [](auto& v, auto& x) { v("path", x.path, kRequired); };

constexpr auto fs_list_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v.nonempty("after", x.after);
  v("limit", x.limit);
};

constexpr auto fs_scan_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v("pattern", x.pattern, kRequired);
  v.nonempty("after", x.after);
  v("max_entries", x.max_entries);
};

constexpr auto fs_read_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v("offset", x.offset);
  v("length", x.length);
};

constexpr auto fs_hash_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v("chunk_size", x.chunk_size);
  v("indices", x.indices);
};

// The replies: a field the agent always sends is required, so a renamed key fails at once.
constexpr auto fs_stat_reply_fields = [](auto& v, auto& x) {
  v("exists", x.exists, kRequired);
  v("path", x.path);
  if (x.exists) {  // read by then, on reading
    v.named("type", x.type, kFsTypeNames, kRequired);
    v("size", x.size, kRequired);
    v("mtime_ms", x.mtime_ms);
    v("mtime_ns", x.mtime_ns);
    v("ino", x.ino);
  }
};

constexpr auto listed_file_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v("size", x.size, kRequired);
  v("mode", x.mode);
  v("mtime_ns", x.mtime_ns);
  v("ino", x.ino);
};

constexpr auto fs_list_reply_fields = [](auto& v, auto& x) {
  v.named("type", x.type, kFsTypeNames, kRequired);
  v.objects("files", x.files, listed_file_fields, kRequired);
  v("more", x.more);
};

constexpr auto scanned_file_fields = [](auto& v, auto& x) {
  v("path", x.path, kRequired);
  v("size", x.size);
  v("mtime_ns", x.mtime_ns);
};

constexpr auto scanned_folder_fields = [](auto& v, auto& x) {
  v("name", x.name, kRequired);
  v("mtime_ns", x.mtime_ns);
  v.objects("files", x.files, scanned_file_fields, kRequired);
  if (kReads<decltype(v)> || x.truncated) v("truncated", x.truncated);
};

constexpr auto fs_scan_reply_fields = [](auto& v, auto& x) {
  v("now_ns", x.now_ns);
  v.objects("folders", x.folders, scanned_folder_fields, kRequired);
  v("next", x.next);
};

constexpr auto fs_read_reply_fields = [](auto& v, auto& x) {
  v("hash", x.hash, kRequired);
  v("length", x.length, kRequired);
};

constexpr auto fs_hash_reply_fields = [](auto& v, auto& x) { v("chunks", x.chunks, kRequired); };

}  // namespace

FERRY_REQUEST_JSON(FsStatArgs, fs_stat_fields)
FERRY_REQUEST_JSON(FsListArgs, fs_list_fields)
FERRY_REQUEST_JSON(FsScanArgs, fs_scan_fields)
FERRY_REQUEST_JSON(FsReadArgs, fs_read_fields)
FERRY_REQUEST_JSON(FsHashArgs, fs_hash_fields)
FERRY_REPLY_JSON(FsStatReply, "the fs.stat reply", fs_stat_reply_fields)
FERRY_REPLY_JSON(FsListReply, "the fs.list reply", fs_list_reply_fields)
FERRY_REPLY_JSON(FsScanReply, "the fs.scan reply", fs_scan_reply_fields)
FERRY_REPLY_JSON(FsReadReply, "the fs.read reply", fs_read_reply_fields)
FERRY_REPLY_JSON(FsHashReply, "the fs.hash reply", fs_hash_reply_fields)

}  // namespace ferry::protocol
