#include "jobs/eval/io/weight_loader.h"

#include "jobs/eval/cpu/packed_bf16_linear.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

namespace ferry::eval {
namespace {

// Lists longer than this are cut in error messages.
constexpr size_t kMaxListedProblems = 12;
// Panels packed between releases of the mapped pages they came from (64 panels = 1,024
// rows: 2 MiB at K = 1,024).
constexpr int64_t kPanelsPerSlice = 64;

// Drops the whole pages of a mapped tensor from the process (the file keeps them in the
// page cache). The mapping is private and read-only, so a later read would only fault
// them back in from the file: nothing can see different bytes.
void release_mapped_pages(const at::Tensor& t) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  const uintptr_t end = begin + static_cast<uintptr_t>(t.nbytes());
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// Transparent huge pages, where the kernel gives them on request (THP "madvise"):
constexpr size_t kHugePage = size_t{2} << 20;

// An uninitialised CPU tensor whose 2 MiB-aligned body is backed by huge pages: packing
// faults in one page per 2 MiB instead of 512, and a decode step, which streams every
// weight once, walks 512 times fewer page-table entries. The tail past the last whole
// huge page stays on 4 KiB pages, so nothing is allocated beyond the tensor's bytes.
at::Tensor empty_on_huge_pages(at::IntArrayRef sizes, const at::TensorOptions& options) {
  int64_t numel = 1;
  for (int64_t n : sizes) numel *= n;
  const size_t bytes = static_cast<size_t>(numel) * options.dtype().itemsize();
  void* data = nullptr;
  if (bytes < kHugePage || ::posix_memalign(&data, kHugePage, bytes) != 0) return at::empty(sizes, options);
  ::madvise(data, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // a refusal leaves 4 KiB pages
  return at::from_blob(data, sizes, [](void* p) { std::free(p); }, options);
}

}  // namespace

Result<at::Tensor> tensor_from_record(const TensorRecord& record) {
  at::ScalarType type;
  switch (record.info.dtype) {
    case StDtype::kF32: type = at::kFloat; break;
    case StDtype::kF16: type = at::kHalf; break;
    case StDtype::kBF16: type = at::kBFloat16; break;
    case StDtype::kF64: type = at::kDouble; break;
    default:
      return invalid_argument(record.info.file + ": tensor '" + record.info.name + "' has dtype " +
                              record.info.dtype_name + "; weights must be F32, F16, BF16 or F64");
  }
  // The deleter keeps the mapping alive while any tensor views it.
  std::shared_ptr<MappedFile> owner = record.owner;
  try {
    return at::from_blob(const_cast<uint8_t*>(record.data), record.info.shape,
                         [owner](void*) mutable { owner.reset(); },
                         at::TensorOptions().dtype(type).device(at::kCPU));
  } catch (const c10::Error& e) {
    return internal_error(record.info.file + ": tensor '" + record.info.name + "': " + e.what_without_backtrace());
  }
}

WeightLoader::WeightLoader(SafetensorsCheckpoint* checkpoint, std::string what, ComputeOptions options)
    : checkpoint_(checkpoint), what_(std::move(what)), options_(options) {
  report_.what = what_;
  report_.location = checkpoint_->location();
  report_.sharded = checkpoint_->sharded();
}

at::Tensor WeightLoader::take(const std::string& name, const std::vector<int64_t>& shape) {
  taken_.push_back(name);
  if (!checkpoint_->contains(name)) {
    report_.problems.push_back("missing tensor '" + name + "' (expected " + shape_string(shape) + ")");
    return at::Tensor();
  }
  auto info = checkpoint_->info(name);
  if (!info.ok()) {
    report_.problems.push_back(info.status().message());
    return at::Tensor();
  }
  if (info->shape != shape) {
    report_.problems.push_back(info->file + ": tensor '" + name + "' has shape " + shape_string(info->shape) +
                               ", expected " + shape_string(shape));
    return at::Tensor();
  }
  auto record = checkpoint_->read(name);
  if (!record.ok()) {
    report_.problems.push_back(record.status().message());
    return at::Tensor();
  }
  auto raw = tensor_from_record(*record);
  if (!raw.ok()) {
    report_.problems.push_back(raw.status().message());
    return at::Tensor();
  }
  if (std::find(report_.source_dtypes.begin(), report_.source_dtypes.end(), info->dtype_name) ==
      report_.source_dtypes.end()) {
    report_.source_dtypes.push_back(info->dtype_name);
  }
  ++report_.tensors_loaded;
  report_.bytes_mapped += static_cast<int64_t>(record->nbytes);
  if (raw->scalar_type() == options_.dtype && options_.device.is_cpu()) {
    ++report_.tensors_zero_copy;
    return *raw;
  }
  at::Tensor copy = raw->to(options_.device, options_.dtype);
  report_.bytes_copied += copy.numel() * static_cast<int64_t>(copy.element_size());
  return copy;
}

at::Tensor WeightLoader::take_linear(const std::string& name, const std::vector<int64_t>& shape, bool padded) {
  const int64_t in_place_before = report_.tensors_zero_copy;
  at::Tensor w = take(name, shape);
  if (!w.defined() || !bf16_weight_packable(w, padded)) return w;
  // A slice of rows at a time, each slice's mapped pages released once packed, so the
  // process holds one copy of the weights plus a slice, not two copies of the matrix.
  const bool mapped = report_.tensors_zero_copy > in_place_before;
  const int64_t panels = bf16_panels_for(w.size(0));
  at::Tensor packed = empty_on_huge_pages({panels, w.size(1) / 2, 2 * kBf16PanelColumns}, w.options());
  for (int64_t p = 0; p < panels; p += kPanelsPerSlice) {
    const int64_t count = std::min(kPanelsPerSlice, panels - p);
    const int64_t first_row = p * kBf16PanelColumns;
    const at::Tensor rows = w.narrow(0, first_row, std::min(count * kBf16PanelColumns, w.size(0) - first_row));
    pack_bf16_panels(rows, packed.narrow(0, p, count));
    if (mapped) release_mapped_pages(rows);
  }
  if (mapped) --report_.tensors_zero_copy;
  ++report_.tensors_repacked;
  return packed;
}

at::Tensor WeightLoader::take_float32(const std::string& name, const std::vector<int64_t>& shape) {
  const ComputeOptions saved = options_;
  options_.dtype = at::kFloat;
  at::Tensor t = take(name, shape);
  options_ = saved;
  return t;
}

void WeightLoader::ignore(const std::string& name) { ignored_.push_back(name); }

at::Tensor WeightLoader::take_lm_head(const at::Tensor& embed_tokens, bool tied, int64_t vocab, int64_t hidden) {
  // An untied head is the largest matrix of a decode step (Qwen3.6-27B: 2.4 GiB): packed
  // like the projections. A tied one is also the embedding table, read by rows.
  if (!tied) return take_linear("lm_head.weight", {vocab, hidden}, /*padded=*/true);
  if (has("lm_head.weight")) ignore("lm_head.weight");
  return embed_tokens;
}

Status WeightLoader::finish(const std::vector<std::string>& skip_prefixes, LoadReport* report) {
  std::set<std::string> used(taken_.begin(), taken_.end());
  used.insert(ignored_.begin(), ignored_.end());
  for (const std::string& name : checkpoint_->names()) {
    bool skip = false;
    for (const std::string& p : skip_prefixes) {
      if (name.compare(0, p.size(), p) == 0) skip = true;
    }
    if (skip) {
      report_.skipped.push_back(name);
    } else if (!used.count(name)) {
      report_.unused.push_back(name);
    }
  }
  report_.files_opened = checkpoint_->opened_files();
  if (report != nullptr) *report = report_;
  if (report_.problems.empty()) return Status();
  std::ostringstream msg;
  msg << what_ << " " << checkpoint_->location() << ": cannot load (" << report_.problems.size()
      << " problem" << (report_.problems.size() == 1 ? "" : "s") << "): ";
  for (size_t i = 0; i < report_.problems.size() && i < kMaxListedProblems; ++i) {
    msg << (i ? "; " : "") << report_.problems[i];
  }
  if (report_.problems.size() > kMaxListedProblems) msg << "; ...";
  return invalid_argument(msg.str());
}

}  // namespace ferry::eval
