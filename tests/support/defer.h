// Test support: Defer runs a function at scope exit — unmount, restore a cut link,
// end a stray process — even when an assertion returns from the test early.
// Tests only; header-only.
#pragma once

#include <functional>

namespace ferry::testing {

struct Defer {
  std::function<void()> f;
  ~Defer() {
    if (f) f();
  }
};

}  // namespace ferry::testing
