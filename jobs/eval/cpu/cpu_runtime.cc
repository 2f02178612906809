#include "jobs/eval/cpu/cpu_runtime.h"

#include "jobs/eval/cpu/cpu_features.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <link.h>
#include <sched.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace ferry::eval {
namespace {

// The engine loads the OpenMP OpenBLAS by its own RUNPATH when the package is there
// (jobs/eval/CMakeLists.txt); OpenMP shares libtorch's thread pool (jobs/eval/README.md).
constexpr const char* kBlasFix =
    "install libopenblas0-openmp (ferry's eval then loads it by its own search path) and leave "
    "LD_LIBRARY_PATH without another libblas.so.3; or select it for every program: "
    "update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3";

std::string real_path(const char* path) {
  char buf[PATH_MAX];
  if (path == nullptr) return "";
  return ::realpath(path, buf) != nullptr ? std::string(buf) : std::string(path);
}

// The loaded object whose file name contains `fragment` (first in load order).
std::string loaded_object(const char* fragment) {
  struct Search {
    const char* fragment;
    std::string found;
  } search{fragment, ""};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->fragment) != nullptr) {
          s->found = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &search);
  return search.found;
}

// A handle on an already loaded object (never loads one); null when absent.
void* handle_of(const std::string& path) {
  return path.empty() ? nullptr : ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
}

// Looks `symbol` up the way `handle`'s own references resolve: in the object, then its
// dependencies in load order.
void* lookup(void* handle, const char* symbol) { return handle == nullptr ? nullptr : ::dlsym(handle, symbol); }

std::string object_of(void* address) {
  Dl_info info;
  if (address == nullptr || ::dladdr(address, &info) == 0) return "";
  return real_path(info.dli_fname);
}

BlasInfo probe_blas() {
  BlasInfo b;
  void* torch = handle_of(loaded_object("libtorch_cpu.so"));
  void* sgemm = lookup(torch, "sgemm_");
  if (torch != nullptr) ::dlclose(torch);
  if (sgemm == nullptr) {
    b.name = "none found (libtorch_cpu calls no sgemm_)";
    return b;
  }
  b.library = object_of(sgemm);
  void* blas = handle_of(b.library);
  using CharFn = char* (*)();
  using IntFn = int (*)();
  if (auto config = reinterpret_cast<CharFn>(lookup(blas, "openblas_get_config"))) {
    b.name = config();
    if (auto core = reinterpret_cast<CharFn>(lookup(blas, "openblas_get_corename"))) {
      b.name += std::string(" (core ") + core() + ")";
    }
    if (auto parallel = reinterpret_cast<IntFn>(lookup(blas, "openblas_get_parallel"))) {
      const int p = parallel();
      b.threading = p == 2 ? "openmp" : p == 1 ? "pthreads" : "sequential";
    }
  } else if (auto mkl = reinterpret_cast<void (*)(char*, int)>(lookup(blas, "mkl_get_version_string"))) {
    char version[256] = {0};
    mkl(version, sizeof(version) - 1);
    b.name = version;
  } else if (auto blis = reinterpret_cast<CharFn>(lookup(blas, "bli_info_get_version_str"))) {
    b.name = std::string("BLIS ") + blis();
  } else if (b.library.find("/blas/libblas.so") != std::string::npos ||
             b.library.find("libblas.so") != std::string::npos || b.library.find("librefblas") != std::string::npos) {
    b.name = "reference BLAS (netlib)";
    b.reference = true;
  } else {
    b.name = "unknown BLAS";
  }
  if (blas != nullptr) ::dlclose(blas);
  return b;
}

}  // namespace

std::string BlasInfo::advice() const {
  if (!reference) return "";
  return "float32 matmuls run on the reference (netlib) BLAS " + library +
         ", which computes a 16-row matmul as 16 single rows; " + kBlasFix;
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return 1;
}

int configure_threads(int requested) {
  const int n = requested > 0 ? requested : available_cores();
  at::set_num_threads(n);
  // A pthreads OpenBLAS keeps a pool of its own: size it alike so the two pools
  // together never ask for more CPUs than the eval was given.
  BlasInfo blas = probe_blas();
  if (!blas.library.empty()) {
    void* handle = handle_of(blas.library);
    if (auto set = reinterpret_cast<void (*)(int)>(lookup(handle, "openblas_set_num_threads"))) set(n);
    if (handle != nullptr) ::dlclose(handle);
  }
  return at::get_num_threads();
}

void* libtorch_blas_symbol(const char* name) {
  void* torch = handle_of(loaded_object("libtorch_cpu.so"));
  void* symbol = lookup(torch, name);
  if (torch != nullptr) ::dlclose(torch);  // libtorch stays loaded: the program links it
  return symbol;
}

CpuRuntime probe_cpu_runtime() {
  CpuRuntime r;
  r.blas = probe_blas();
  r.isa = isa_summary();
  r.threads = at::get_num_threads();
  r.cores = available_cores();
  return r;
}

}  // namespace ferry::eval
