#include "jobs/eval/cpu/cpu_features.h"

#include <cpuid.h>

namespace ferry::eval {
namespace {

bool bit(unsigned value, int n) { return ((value >> n) & 1U) != 0; }

CpuFeatures read_features() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  unsigned long long xcr0 = 0;
  if (bit(c, 27)) {  // OSXSAVE: xgetbv says which register states the OS saves
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6) == 0x6, os_avx512 = (xcr0 & 0xe6) == 0xe6;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0, unused = 0;
  if (__get_cpuid_count(7, 0, &unused, &b7, &c7, &d7) != 0) {
    __get_cpuid_count(7, 1, &a71, &unused, &unused, &unused);
  }
  f.avx = os_avx && bit(c, 28);
  f.avx2 = os_avx && bit(b7, 5);
  f.avx512f = os_avx512 && bit(b7, 16);
  f.avx512bw = f.avx512f && bit(b7, 30);
  f.avx512vl = f.avx512f && bit(b7, 31);
  f.avx512vnni = f.avx512f && bit(c7, 11);
  f.avx512bf16 = f.avx512f && bit(a71, 5);
  f.amx = os_amx && bit(d7, 24);
  f.amx_bf16 = f.amx && bit(d7, 22);
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = read_features();
  return features;
}

bool bf16_kernel_supported() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512bf16;
}

std::string isa_summary() {
  const CpuFeatures& f = cpu_features();
  std::string out;
  if (f.avx512f) {
    out = "AVX-512 (F";
    if (f.avx512bw) out += ", BW";
    if (f.avx512vl) out += ", VL";
    if (f.avx512vnni) out += ", VNNI";
    if (f.avx512bf16) out += ", BF16";
    out += ")";
  } else if (f.avx2) {
    out = "AVX2";
  } else if (f.avx) {
    out = "AVX";
  } else {
    out = "SSE";
  }
  if (f.amx) out += f.amx_bf16 ? ", AMX-BF16" : ", AMX";
  return out;
}

std::vector<std::string> isa_flags() {
  const CpuFeatures& f = cpu_features();
  std::vector<std::string> out;
  if (f.avx2) out.emplace_back("avx2");
  if (f.avx512f) out.emplace_back("avx512f");
  if (f.avx512bf16) out.emplace_back("avx512_bf16");
  if (f.amx_bf16) out.emplace_back("amx_bf16");
  return out;
}

}  // namespace ferry::eval
