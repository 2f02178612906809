#include "jobs/eval/cpu/small_block_cache.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <array>
#include <mutex>
#include <vector>

namespace ferry::eval {
namespace {

// Each block is laid out as [64-byte header: its size class][the caller's bytes], so the
// deleter (which gets only the data pointer) finds its class; 64 keeps the data aligned
// as libtorch's allocator aligns it.
constexpr size_t kHeader = 64;
constexpr int kClasses = 11;  // 64 B, 128 B, ..., 64 KiB
static_assert((size_t{64} << (kClasses - 1)) == kSmallBlockBytes, "size classes end at kSmallBlockBytes");

int size_class(size_t n) {
  int c = 0;
  while ((size_t{64} << c) < n) ++c;
  return c;
}

size_t class_bytes(int c) { return size_t{64} << c; }

struct FreeLists {
  std::mutex mutex;
  std::array<std::vector<void*>, kClasses> blocks;  // bases (header first)
  size_t bytes = 0;
};

FreeLists& free_lists() {
  static FreeLists* lists = new FreeLists();  // never destroyed: tensors may be freed during exit
  return *lists;
}

void delete_block(void* data) {
  if (data == nullptr) return;
  c10::profiledCPUMemoryReporter().Delete(data);
  void* base = static_cast<char*>(data) - kHeader;
  const int c = *static_cast<int*>(base);
  FreeLists& f = free_lists();
  {
    std::lock_guard<std::mutex> lock(f.mutex);
    if (f.bytes + class_bytes(c) <= kSmallBlockCacheBytes) {
      f.blocks[c].push_back(base);
      f.bytes += class_bytes(c);
      return;
    }
  }
  c10::free_cpu(base);
}

class SmallBlockCache final : public c10::Allocator {
 public:
  explicit SmallBlockCache(c10::Allocator* fallback) : fallback_(fallback) {}

  c10::DataPtr allocate(size_t n) const override {
    if (n == 0 || n > kSmallBlockBytes) return fallback_->allocate(n);
    const int c = size_class(n);
    void* base = nullptr;
    FreeLists& f = free_lists();
    {
      std::lock_guard<std::mutex> lock(f.mutex);
      if (!f.blocks[c].empty()) {
        base = f.blocks[c].back();
        f.blocks[c].pop_back();
        f.bytes -= class_bytes(c);
      }
    }
    if (base == nullptr) {
      base = c10::alloc_cpu(kHeader + class_bytes(c));  // throws when out of memory, as libtorch's
      *static_cast<int*>(base) = c;
    }
    void* data = static_cast<char*>(base) + kHeader;
    c10::profiledCPUMemoryReporter().New(data, n);
    return {data, data, &delete_block, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &delete_block; }

 private:
  c10::Allocator* fallback_;
};

}  // namespace

void use_small_block_cache() {
  static const bool installed = [] {
    // Owned by c10 from here on. Priority 1: above the default registration (0).
    c10::SetCPUAllocator(new SmallBlockCache(c10::GetDefaultCPUAllocator()), /*priority=*/1);
    return true;
  }();
  (void)installed;
}

size_t small_block_cache_bytes() {
  FreeLists& f = free_lists();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.bytes;
}

}  // namespace ferry::eval
