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

nlohmann::json FsStatArgs::to_json() const { return fields_json(*this, fs_stat_fields); }
Result<FsStatArgs> FsStatArgs::from_json(const nlohmann::json& j) {
  return request_from_json<FsStatArgs>(j, "fs.stat", fs_stat_fields);
}

nlohmann::json FsListArgs::to_json() const { return fields_json(*this, fs_list_fields); }
Result<FsListArgs> FsListArgs::from_json(const nlohmann::json& j) {
  return request_from_json<FsListArgs>(j, "fs.list", fs_list_fields);
}

nlohmann::json FsScanArgs::to_json() const { return fields_json(*this, fs_scan_fields); }
Result<FsScanArgs> FsScanArgs::from_json(const nlohmann::json& j) {
  return request_from_json<FsScanArgs>(j, "fs.scan", fs_scan_fields);
}

nlohmann::json FsReadArgs::to_json() const { return fields_json(*this, fs_read_fields); }
Result<FsReadArgs> FsReadArgs::from_json(const nlohmann::json& j) {
  return request_from_json<FsReadArgs>(j, "fs.read", fs_read_fields);
}

nlohmann::json FsHashArgs::to_json() const { return fields_json(*this, fs_hash_fields); }
Result<FsHashArgs> FsHashArgs::from_json(const nlohmann::json& j) {
  return request_from_json<FsHashArgs>(j, "fs.hash", fs_hash_fields);
}

}  // namespace ferry::protocol
