#include "jobs/eval/io/safetensors_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/file_util.h"

namespace ferry::eval {
namespace {

// Elements produced per fill() call when streaming a tensor.
constexpr int64_t kFillChunk = int64_t{1} << 20;

Status encode(const float* values, size_t count, StDtype dtype, const std::string& name, std::string* out) {
  switch (dtype) {
    case StDtype::kF32:
      out->append(reinterpret_cast<const char*>(values), count * 4);
      return Status();
    case StDtype::kBF16:
    case StDtype::kF16:
      out->reserve(out->size() + count * 2);
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits = dtype == StDtype::kBF16 ? float_to_bf16(values[i]) : float_to_f16(values[i]);
        char b[2] = {static_cast<char>(bits & 0xff), static_cast<char>(bits >> 8)};
        out->append(b, 2);
      }
      return Status();
    default:
      return invalid_argument("tensor '" + name + "': cannot write dtype " + st_dtype_name(dtype));
  }
}

Status check_tensor(const WriteTensor& t, StDtype dtype) {
  if (dtype != StDtype::kF32 && dtype != StDtype::kBF16 && dtype != StDtype::kF16) {
    return invalid_argument("tensor '" + t.name + "': cannot write dtype " + st_dtype_name(dtype));
  }
  if (t.values.empty() && t.fill && t.numel() > 0) return Status();
  if (static_cast<int64_t>(t.values.size()) != t.numel()) {
    return invalid_argument("tensor '" + t.name + "': " + std::to_string(t.values.size()) + " values for " +
                            std::to_string(t.numel()) + " elements");
  }
  return Status();
}

// Writes one tensor's bytes: its values, or fill() chunk by chunk.
Status write_data(std::ofstream& out, const WriteTensor& t, StDtype dtype) {
  std::string bytes;
  if (!t.values.empty() || !t.fill) {
    FERRY_RETURN_IF_ERROR(encode(t.values.data(), t.values.size(), dtype, t.name, &bytes));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return Status();
  }
  std::vector<float> chunk;
  for (int64_t begin = 0; begin < t.numel(); begin += kFillChunk) {
    const int64_t count = std::min(kFillChunk, t.numel() - begin);
    chunk.resize(static_cast<size_t>(count));
    t.fill(begin, count, chunk.data());
    bytes.clear();
    FERRY_RETURN_IF_ERROR(encode(chunk.data(), chunk.size(), dtype, t.name, &bytes));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  return Status();
}

StDtype dtype_of(const WriteTensor& t, const std::string& dtype) {
  return parse_st_dtype(t.dtype.empty() ? dtype : t.dtype);
}

}  // namespace

int64_t WriteTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Status write_safetensors_file(const std::string& path, const std::vector<const WriteTensor*>& tensors,
                              const std::string& dtype, const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const WriteTensor* t : tensors) {
    const StDtype d = dtype_of(*t, dtype);
    FERRY_RETURN_IF_ERROR(check_tensor(*t, d));
    const uint64_t size = static_cast<uint64_t>(t->numel()) * st_dtype_size(d);
    header[t->name] = {{"dtype", st_dtype_name(d)}, {"shape", t->shape}, {"data_offsets", {offset, offset + size}}};
    offset += size;
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
  for (const WriteTensor* t : tensors) FERRY_RETURN_IF_ERROR(write_data(out, *t, dtype_of(*t, dtype)));
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
  for (const auto& t : tensors) total += static_cast<uint64_t>(t.numel());
  std::vector<std::vector<const WriteTensor*>> groups(shards);
  uint64_t acc = 0;
  for (const auto& t : tensors) {
    int g = total == 0 ? 0 : static_cast<int>((acc * shards) / total);
    if (g >= shards) g = shards - 1;
    groups[g].push_back(&t);
    acc += static_cast<uint64_t>(t.numel());
  }
  nlohmann::json index;
  uint64_t total_bytes = 0;
  for (int g = 0; g < shards; ++g) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", g + 1, shards);
    FERRY_RETURN_IF_ERROR(write_safetensors_file(folder + "/" + name, groups[g], options.dtype, options.metadata));
    for (const WriteTensor* t : groups[g]) {
      index["weight_map"][t->name] = name;
      total_bytes += static_cast<uint64_t>(t->numel()) * st_dtype_size(dtype_of(*t, options.dtype));
    }
  }
  index["metadata"] = {{"total_size", total_bytes}};
  std::ofstream out(folder + "/model.safetensors.index.json", std::ios::trunc);
  if (!out) return errno_status(folder + "/model.safetensors.index.json: cannot create", errno);
  out << index.dump(2) << "\n";
  return out ? Status() : errno_status(folder + "/model.safetensors.index.json: write failed", errno);
}

}  // namespace ferry::eval
