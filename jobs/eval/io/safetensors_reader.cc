#include "jobs/eval/io/safetensors_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/json_depth.h"

namespace ferry::eval {
namespace {

// A header longer than this is refused rather than parsed (real ones are < 1 MiB; a
// 100 MiB one parsed to a DOM of gigabytes).
constexpr uint64_t kMaxHeaderBytes = 16ull << 20;
// model.safetensors.index.json: one line per tensor, real ones well under 1 MiB.
constexpr size_t kMaxIndexBytes = 16 << 20;

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

StDtype parse_st_dtype(const std::string& name) {
  if (name == "F32") return StDtype::kF32;
  if (name == "F16") return StDtype::kF16;
  if (name == "BF16") return StDtype::kBF16;
  if (name == "F64") return StDtype::kF64;
  if (name == "I64") return StDtype::kI64;
  if (name == "I32") return StDtype::kI32;
  if (name == "I16") return StDtype::kI16;
  if (name == "I8") return StDtype::kI8;
  if (name == "U8") return StDtype::kU8;
  if (name == "BOOL") return StDtype::kBool;
  return StDtype::kOther;
}

const char* st_dtype_name(StDtype dtype) {
  switch (dtype) {
    case StDtype::kF32: return "F32";
    case StDtype::kF16: return "F16";
    case StDtype::kBF16: return "BF16";
    case StDtype::kF64: return "F64";
    case StDtype::kI64: return "I64";
    case StDtype::kI32: return "I32";
    case StDtype::kI16: return "I16";
    case StDtype::kI8: return "I8";
    case StDtype::kU8: return "U8";
    case StDtype::kBool: return "BOOL";
    case StDtype::kOther: return "other";
  }
  return "other";
}

size_t st_dtype_size(StDtype dtype) {
  switch (dtype) {
    case StDtype::kF64: case StDtype::kI64: return 8;
    case StDtype::kF32: case StDtype::kI32: return 4;
    case StDtype::kF16: case StDtype::kBF16: case StDtype::kI16: return 2;
    case StDtype::kI8: case StDtype::kU8: case StDtype::kBool: return 1;
    case StDtype::kOther: return 0;
  }
  return 0;
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

float float_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t bits_of_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

float bf16_to_float(uint16_t bits) { return float_from_bits(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bf16(float value) {
  uint32_t u = bits_of_float(value);
  if (std::isnan(value)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float f16_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) { mant <<= 1; --exp; }
      mant &= 0x3ffu;
      u = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return float_from_bits(u);
}

uint16_t float_to_f16(float value) {
  uint32_t u = bits_of_float(value);
  uint32_t sign = (u >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if (std::isnan(value)) return static_cast<uint16_t>(sign | 0x7e00u);
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

// ---------------------------------------------------------------------------

Result<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status(path + ": cannot open", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return errno_status(path + ": cannot stat", err);
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return errno_status(path + ": cannot mmap", err);
    }
    file->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

// ---------------------------------------------------------------------------

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  auto file = std::make_shared<SafetensorsFile>();
  file->file_ = *mapped;
  const size_t size = file->file_->size();
  if (size < 8) {
    return data_loss(path + ": truncated safetensors file (" + std::to_string(size) +
                     " bytes, no 8-byte header length)");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file->file_->data()[i];
  if (header_len > kMaxHeaderBytes || header_len > size - 8) {
    return data_loss(path + ": header length " + std::to_string(header_len) +
                     " does not fit in the file (" + std::to_string(size) +
                     " bytes): truncated or not a safetensors file");
  }
  file->data_start_ = 8 + static_cast<size_t>(header_len);
  const char* header_text = reinterpret_cast<const char*>(file->file_->data() + 8);
  FERRY_RETURN_IF_ERROR(check_json_depth(std::string_view(header_text, header_len), path + ": safetensors header"));
  nlohmann::json header = nlohmann::json::parse(header_text, header_text + header_len,
                                                nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return invalid_argument(path + ": safetensors header is not a JSON object");
  }
  const uint64_t data_size = size - file->data_start_;
  std::vector<std::pair<uint64_t, std::string>> spans;  // begin -> name, for overlap check
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") {
      if (it->is_object()) {
        for (auto m = it->begin(); m != it->end(); ++m) {
          if (m->is_string()) file->metadata_[m.key()] = m->get<std::string>();
        }
      }
      continue;
    }
    const std::string where = path + ": tensor '" + name + "'";
    const nlohmann::json& entry = *it;
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() ||
        !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      return invalid_argument(where + ": header entry needs dtype, shape and data_offsets");
    }
    TensorInfo info;
    info.name = name;
    info.file = path;
    info.dtype_name = entry["dtype"].get<std::string>();
    info.dtype = parse_st_dtype(info.dtype_name);
    for (const auto& d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) {
        return invalid_argument(where + ": shape holds a non-integer or negative dimension");
      }
      info.shape.push_back(d.get<int64_t>());
    }
    const auto& off = entry["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      return invalid_argument(where + ": data_offsets must be two non-negative integers");
    }
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    if (info.end < info.begin) {
      return invalid_argument(where + ": data_offsets end before they begin");
    }
    if (info.end > data_size) {
      return data_loss(where + ": data_offsets [" + std::to_string(info.begin) + ", " +
                       std::to_string(info.end) + ") run past the end of the data (" +
                       std::to_string(data_size) + " bytes): truncated file");
    }
    // The element count must fit numel()'s int64, whatever the dtype (an unknown
    // dtype has no byte size to check the shape against below).
    uint64_t count = 1;
    for (int64_t d : info.shape) {
      if (d != 0 && count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d)) {
        return invalid_argument(where + ": shape " + shape_string(info.shape) + " has too many elements");
      }
      count *= static_cast<uint64_t>(d);
    }
    const size_t elem = st_dtype_size(info.dtype);
    if (elem != 0) {
      // Guard the product against overflow before comparing sizes.
      uint64_t expect = elem;
      for (int64_t d : info.shape) {
        if (d != 0 && expect > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
          return invalid_argument(where + ": shape too large");
        }
        expect *= static_cast<uint64_t>(d);
      }
      if (expect != info.end - info.begin) {
        return invalid_argument(where + ": " + info.dtype_name + " " + shape_string(info.shape) +
                                " needs " + std::to_string(expect) + " bytes but data_offsets span " +
                                std::to_string(info.end - info.begin));
      }
    }
    spans.emplace_back(info.begin, name);
    file->tensors_.emplace(name, std::move(info));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) {
    const TensorInfo& prev = file->tensors_.at(spans[i - 1].second);
    const TensorInfo& cur = file->tensors_.at(spans[i].second);
    if (cur.begin < prev.end && cur.end > cur.begin && prev.end > prev.begin) {
      return invalid_argument(path + ": tensors '" + prev.name + "' and '" + cur.name +
                              "' overlap in the data buffer");
    }
  }
  return file;
}

Result<TensorRecord> SafetensorsFile::record(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return not_found(path() + ": no tensor '" + name + "'");
  TensorRecord rec;
  rec.info = it->second;
  rec.data = file_->data() + data_start_ + it->second.begin;
  rec.nbytes = static_cast<size_t>(it->second.end - it->second.begin);
  rec.owner = file_;
  return rec;
}

// ---------------------------------------------------------------------------

Result<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::open(const std::string& path) {
  auto ckpt = std::unique_ptr<SafetensorsCheckpoint>(new SafetensorsCheckpoint());
  ckpt->location_ = path;
  std::string single;
  std::string index;
  if (is_dir(path)) {
    ckpt->folder_ = path;
    // Both: two checkpoints in one folder (an old single-file save beside a new
    // sharded one, say): loading either could score the wrong weights.
    if (is_file(path + "/model.safetensors") && is_file(path + "/model.safetensors.index.json")) {
      return invalid_argument(path + " holds both model.safetensors and model.safetensors.index.json: two "
                                     "checkpoints in one folder; remove the one that is not current");
    }
    if (is_file(path + "/model.safetensors")) {
      single = path + "/model.safetensors";
    } else if (is_file(path + "/model.safetensors.index.json")) {
      index = path + "/model.safetensors.index.json";
    } else {
      return not_found(path + ": no model.safetensors or model.safetensors.index.json");
    }
  } else if (is_file(path)) {
    auto slash = path.rfind('/');
    ckpt->folder_ = slash == std::string::npos ? "." : path.substr(0, slash);
    if (path.size() >= 5 && path.substr(path.size() - 5) == ".json") {
      index = path;
    } else {
      single = path;
    }
  } else {
    return not_found(path + ": no such checkpoint file or folder");
  }

  if (!single.empty()) {
    auto file = SafetensorsFile::open(single);
    if (!file.ok()) return file.status();
    for (const auto& [name, info] : (*file)->tensors()) {
      ckpt->names_.push_back(name);
      ckpt->shard_of_[name] = single;
    }
    ckpt->open_[single] = *file;
    return ckpt;
  }

  ckpt->sharded_ = true;
  auto text = read_file(index, kMaxIndexBytes);
  if (!text.ok()) return text.status();
  FERRY_RETURN_IF_ERROR(check_json_depth(*text, index));
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(index + ": invalid JSON");
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
    return invalid_argument(index + ": missing object 'weight_map'");
  }
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it->is_string()) {
      return invalid_argument(index + ": weight_map entry '" + it.key() + "' is not a file name");
    }
    std::string file = it->get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      return invalid_argument(index + ": weight_map entry '" + it.key() +
                              "' names a file outside the folder: '" + file + "'");
    }
    ckpt->names_.push_back(it.key());
    ckpt->shard_of_[it.key()] = ckpt->folder_ + "/" + file;
  }
  return ckpt;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsCheckpoint::shard(const std::string& file) {
  auto it = open_.find(file);
  if (it != open_.end()) return it->second;
  auto opened = SafetensorsFile::open(file);
  if (!opened.ok()) return opened.status();
  open_[file] = *opened;
  return *opened;
}

Result<TensorInfo> SafetensorsCheckpoint::info(const std::string& name) {
  auto it = shard_of_.find(name);
  if (it == shard_of_.end()) return not_found(location_ + ": no tensor '" + name + "'");
  auto file = shard(it->second);
  if (!file.ok()) return file.status();
  auto t = (*file)->tensors().find(name);
  if (t == (*file)->tensors().end()) {
    return invalid_argument(it->second + ": tensor '" + name +
                            "' is listed in the index but absent from this shard");
  }
  return t->second;
}

Result<TensorRecord> SafetensorsCheckpoint::read(const std::string& name) {
  auto i = info(name);
  if (!i.ok()) return i.status();
  auto file = shard(shard_of_.at(name));
  if (!file.ok()) return file.status();
  auto rec = (*file)->record(name);
  if (rec.ok()) read_names_.insert(name);
  return rec;
}

std::vector<std::string> SafetensorsCheckpoint::opened_files() const {
  std::vector<std::string> out;
  for (const auto& [file, unused] : open_) out.push_back(file);
  return out;
}

}  // namespace ferry::eval
