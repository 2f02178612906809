#include "jobs/eval/safetensors_writer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ferry::eval {
namespace {

Status make_dirs(const std::string& folder) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = folder.find('/', pos + 1);
    partial = folder.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return errno_status(partial + ": cannot create folder", errno);
    }
  }
  return Status();
}

Status encode(const WriteTensor& t, StDtype dtype, std::string* out) {
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  if (static_cast<int64_t>(t.values.size()) != numel) {
    return invalid_argument("tensor '" + t.name + "': " + std::to_string(t.values.size()) +
                            " values for " + std::to_string(numel) + " elements");
  }
  switch (dtype) {
    case StDtype::kF32:
      out->append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
      return Status();
    case StDtype::kBF16:
    case StDtype::kF16:
      for (float v : t.values) {
        uint16_t bits = dtype == StDtype::kBF16 ? float_to_bf16(v) : float_to_f16(v);
        char b[2] = {static_cast<char>(bits & 0xff), static_cast<char>(bits >> 8)};
        out->append(b, 2);
      }
      return Status();
    default:
      return invalid_argument("tensor '" + t.name + "': cannot write dtype " + st_dtype_name(dtype));
  }
}

}  // namespace

Status write_safetensors_file(const std::string& path, const std::vector<const WriteTensor*>& tensors,
                              const std::string& dtype, const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const WriteTensor* t : tensors) {
    const std::string name = t->dtype.empty() ? dtype : t->dtype;
    StDtype d = parse_st_dtype(name);
    uint64_t begin = data.size();
    FERRY_RETURN_IF_ERROR(encode(*t, d, &data));
    header[t->name] = {{"dtype", name}, {"shape", t->shape}, {"data_offsets", {begin, data.size()}}};
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text = header.dump();
  while ((text.size() + 8) % 8 != 0) text.push_back(' ');  // align the data buffer
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return errno_status(path + ": cannot create", errno);
  uint64_t n = text.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.write(len, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return errno_status(path + ": write failed", errno);
  return Status();
}

Status write_safetensors_checkpoint(const std::string& folder, const std::vector<WriteTensor>& tensors,
                                    const WriteOptions& options) {
  FERRY_RETURN_IF_ERROR(make_dirs(folder));
  if (options.shards <= 0) {
    std::vector<const WriteTensor*> all;
    for (const auto& t : tensors) all.push_back(&t);
    return write_safetensors_file(folder + "/model.safetensors", all, options.dtype, options.metadata);
  }
  const int shards = options.shards;
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.values.size();
  std::vector<std::vector<const WriteTensor*>> groups(shards);
  uint64_t acc = 0;
  for (const auto& t : tensors) {
    int g = total == 0 ? 0 : static_cast<int>((acc * shards) / total);
    if (g >= shards) g = shards - 1;
    groups[g].push_back(&t);
    acc += t.values.size();
  }
  nlohmann::json index;
  uint64_t total_bytes = 0;
  for (int g = 0; g < shards; ++g) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", g + 1, shards);
    FERRY_RETURN_IF_ERROR(write_safetensors_file(folder + "/" + name, groups[g], options.dtype, options.metadata));
    for (const WriteTensor* t : groups[g]) {
      index["weight_map"][t->name] = name;
      total_bytes += t->values.size() * st_dtype_size(parse_st_dtype(t->dtype.empty() ? options.dtype : t->dtype));
    }
  }
  index["metadata"] = {{"total_size", total_bytes}};
  std::ofstream out(folder + "/model.safetensors.index.json", std::ios::trunc);
  if (!out) return errno_status(folder + "/model.safetensors.index.json: cannot create", errno);
  out << index.dump(2) << "\n";
  return out ? Status() : errno_status(folder + "/model.safetensors.index.json: write failed", errno);
}

}  // namespace ferry::eval
