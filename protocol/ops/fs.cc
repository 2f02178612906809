#include "protocol/ops/fs.h"

#include "protocol/ops/message_fields.h"

namespace ferry::protocol {
namespace {

// Both directions of each request (base/json_field_writer.h, base/json_fields.h).
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

}  // namespace

FERRY_REQUEST_JSON(FsStatArgs, "fs.stat", fs_stat_fields)
FERRY_REQUEST_JSON(FsListArgs, "fs.list", fs_list_fields)
FERRY_REQUEST_JSON(FsScanArgs, "fs.scan", fs_scan_fields)
FERRY_REQUEST_JSON(FsReadArgs, "fs.read", fs_read_fields)
FERRY_REQUEST_JSON(FsHashArgs, "fs.hash", fs_hash_fields)

}  // namespace ferry::protocol
