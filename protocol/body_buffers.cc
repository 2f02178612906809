#include "protocol/body_buffers.h"

#include <mutex>
#include <utility>
#include <vector>

namespace ferry::protocol {
namespace {

std::mutex& pool_mutex() {
  static std::mutex mu;
  return mu;
}

// Idle bodies, each sized to its whole capacity (so shrinking it to a request is free).
std::vector<std::string>& pool() {
  static std::vector<std::string> bodies;
  return bodies;
}

}  // namespace

std::string take_body_buffer(size_t n) {
  std::string out;
  if (n >= kRecycledBodyMinBytes) {
    std::lock_guard<std::mutex> lock(pool_mutex());
    auto& bodies = pool();
    for (size_t i = 0; i < bodies.size(); ++i) {
      if (bodies[i].size() >= n) {
        out = std::move(bodies[i]);
        bodies[i] = std::move(bodies.back());
        bodies.pop_back();
        break;
      }
    }
  }
  out.resize(n);  // shrinking writes one terminator; only a fresh body is zero-filled
  return out;
}

void recycle_body_buffer(std::string&& body) {
  if (body.capacity() < kRecycledBodyMinBytes) return;
  std::string kept = std::move(body);
  body = std::string();
  // Zero-fills only the tail a short last chunk left unused, once.
  kept.resize(kept.capacity());
  std::lock_guard<std::mutex> lock(pool_mutex());
  if (pool().size() < kRecycledBodiesMax) pool().push_back(std::move(kept));
}

size_t idle_body_buffers() {
  std::lock_guard<std::mutex> lock(pool_mutex());
  return pool().size();
}

}  // namespace ferry::protocol
