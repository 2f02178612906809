// SafetensorsCheckpoint: read-only access to Hugging Face safetensors checkpoints.
//
// A checkpoint is one `model.safetensors` file or a folder sharded through
// `model.safetensors.index.json`. Files are memory-mapped; a tensor's bytes are only
// touched when a caller asks for them, so tensors that are never used (a VLM's vision
// tower, an MTP head) are never read from disk. Every header is validated when its
// file is opened: the 8-byte length, the JSON, each tensor's dtype/shape/offsets
// against the file's size and against each other; a bad file is refused with a
// message naming the file and the tensor.
//
// No libtorch here: the engine turns a TensorRecord into a tensor in weight_loader.cc.
// Thread contract: one checkpoint belongs to one thread (it records which tensors
// were read). Mapped memory lives as long as any TensorRecord.owner does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ferry::eval {

enum class StDtype { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool, kOther };

/// "F32", "BF16", ... ; kOther covers dtypes we can index but not compute with.
StDtype parse_st_dtype(const std::string& name);
const char* st_dtype_name(StDtype dtype);
/// Bytes per element; 0 for kOther.
size_t st_dtype_size(StDtype dtype);
/// A shape (or any list of integers) as messages and diffs print it: "[2, 3]".
std::string shape_string(const std::vector<int64_t>& shape);

/// A memory-mapped file; unmapped when the last owner goes away.
class MappedFile {
 public:
  static Result<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

/// One tensor's header entry (no data).
struct TensorInfo {
  std::string name;
  std::string dtype_name;  // as written in the header
  StDtype dtype = StDtype::kOther;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // offsets relative to the data buffer, end exclusive
  uint64_t end = 0;
  std::string file;  // path of the file holding it
  int64_t numel() const;
};

/// A tensor's header entry plus its mapped bytes.
struct TensorRecord {
  TensorInfo info;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<MappedFile> owner;  // keeps `data` mapped
};

/// One parsed .safetensors file.
class SafetensorsFile {
 public:
  static Result<std::shared_ptr<SafetensorsFile>> open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The tensor's bytes; not found if absent.
  Result<TensorRecord> record(const std::string& name) const;

 private:
  std::shared_ptr<MappedFile> file_;
  size_t data_start_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A single file or a sharded folder, addressed by tensor name.
class SafetensorsCheckpoint {
 public:
  /// `path` is a folder (model.safetensors or model.safetensors.index.json inside)
  /// or a .safetensors file. Shards are opened lazily, when a tensor in them is
  /// first asked for, except that shape queries open the shard's header.
  static Result<std::unique_ptr<SafetensorsCheckpoint>> open(const std::string& path);

  /// Every tensor name the checkpoint declares.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return shard_of_.count(name) != 0; }
  /// Header entry (opens the shard's header, reads no tensor data).
  Result<TensorInfo> info(const std::string& name);
  /// Header entry plus mapped bytes; records the name as read.
  Result<TensorRecord> read(const std::string& name);
  /// Names whose bytes were handed out by read().
  const std::set<std::string>& read_names() const { return read_names_; }
  /// Shard files opened so far.
  std::vector<std::string> opened_files() const;
  const std::string& location() const { return location_; }
  bool sharded() const { return sharded_; }

 private:
  Result<std::shared_ptr<SafetensorsFile>> shard(const std::string& file);

  std::string location_;
  std::string folder_;
  bool sharded_ = false;
  std::vector<std::string> names_;
  std::map<std::string, std::string> shard_of_;  // tensor name -> file path
  std::map<std::string, std::shared_ptr<SafetensorsFile>> open_;
  std::set<std::string> read_names_;
};

/// A model folder as a model's load() opens it: the config its family's reader made of
/// config.json, and its checkpoint.
template <typename Config>
struct ModelFolder {
  Config config;
  std::unique_ptr<SafetensorsCheckpoint> checkpoint;
};

/// Reads `folder`'s config with `read_config` (load_qwen3_config...), then opens its
/// checkpoint; the first error of either.
template <typename Config>
Result<ModelFolder<Config>> open_model_folder(const std::string& folder,
                                              Result<Config> (*read_config)(const std::string&)) {
  auto config = read_config(folder);
  if (!config.ok()) return config.status();
  auto checkpoint = SafetensorsCheckpoint::open(folder);
  if (!checkpoint.ok()) return checkpoint.status();
  return ModelFolder<Config>{std::move(*config), std::move(*checkpoint)};
}

/// bf16/f16 bit patterns to float (exact).
float bf16_to_float(uint16_t bits);
float f16_to_float(uint16_t bits);
/// Round-to-nearest-even float to bf16 / f16 bits.
uint16_t float_to_bf16(float value);
uint16_t float_to_f16(float value);

}  // namespace ferry::eval
