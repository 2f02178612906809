#include "agents/copy_plan.h"

#include <algorithm>

#include "agents/chunk_files.h"

namespace ferry {
namespace {

std::string basename_of(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

std::string copy_dest_for(const std::string& to, const std::string& from, const std::string& rel, bool is_dir) {
  if (is_dir) return to + "/" + rel;
  if (!to.empty() && to.back() == '/') return to + basename_of(from);
  return to;
}

int64_t copy_chunk_len(int64_t size, int64_t chunk_size, int64_t index) {
  return std::min(chunk_size, size - index * chunk_size);
}

CopyListing plan_copy(const nlohmann::json& listing, const std::string& from, const std::string& to,
                      int64_t chunk_size) {
  CopyListing out;
  out.is_dir = listing.value("type", std::string()) == "dir";
  for (const auto& f : listing.value("files", nlohmann::json::array())) {
    CopyFile file;
    file.rel = f.value("path", std::string());
    file.size = f.value("size", int64_t{0});
    file.mode = f.value("mode", 0644);
    file.src = out.is_dir ? from + "/" + file.rel : from;
    file.dest = copy_dest_for(to, from, file.rel, out.is_dir);
    file.chunks = file.size == 0 ? 0 : (file.size + chunk_size - 1) / chunk_size;
    file.hashes.resize(static_cast<size_t>(file.chunks));
    out.bytes_total += file.size;
    out.files.push_back(std::move(file));
  }
  return out;
}

std::string copy_manifest_hash(const std::vector<CopyFile>& files) {
  nlohmann::json manifest = nlohmann::json::array();
  for (const auto& f : files) manifest.push_back({f.rel, f.size, file_hash_of(f.hashes)});
  return file_hash_of({manifest.dump()});
}

bool dest_may_hold(const nlohmann::json& stat_reply, int64_t size) {
  return stat_reply.value("exists", false) && stat_reply.value("type", std::string()) == "file" &&
         stat_reply.value("size", int64_t{-1}) == size;
}

void drop_stale_chunks(std::map<int64_t, std::string>* have, const std::map<int64_t, std::string>& source) {
  for (const auto& [idx, src_hash] : source) {
    auto it = have->find(idx);
    if (it != have->end() && it->second != src_hash) have->erase(it);
  }
}

std::map<int64_t, std::string> chunk_map_from_json(const nlohmann::json& j) {
  std::map<int64_t, std::string> out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) out[std::stoll(k)] = v.get<std::string>();
  }
  return out;
}

nlohmann::json chunk_map_to_json(const std::map<int64_t, std::string>& m) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [i, h] : m) out[std::to_string(i)] = h;
  return out;
}

nlohmann::json recv_begin_args(const CopyFile& f, int64_t chunk_size, const std::string& file_hash) {
  nlohmann::json args = {{"dest", f.dest}, {"size", f.size}, {"chunk_size", chunk_size}, {"mode", f.mode}};
  if (!file_hash.empty()) args["file_hash"] = file_hash;
  return args;
}

void apply_recv_begin(CopyFile* f, const nlohmann::json& reply) {
  f->dest_complete = reply.value("complete", false);
  f->dest_have = chunk_map_from_json(reply.value("have", nlohmann::json::object()));
  if (f->dest_complete) {
    for (int64_t c = 0; c < f->chunks; ++c) f->dest_have[c] = f->hashes[static_cast<size_t>(c)];
  }
}

nlohmann::json recv_write_args(const CopyFile& f, int64_t index, int64_t chunk_size, const std::string& hash) {
  return {{"dest", f.dest}, {"index", index}, {"chunk_size", chunk_size}, {"hash", hash}};
}

nlohmann::json recv_commit_args(const CopyFile& f, int64_t chunk_size) {
  return {{"dest", f.dest}, {"chunk_size", chunk_size}, {"chunks", f.hashes}};
}

std::vector<int64_t> recv_commit_bad(const nlohmann::json& reply) {
  if (reply.value("committed", false)) return {};
  return reply.value("bad", std::vector<int64_t>{});
}

}  // namespace ferry
