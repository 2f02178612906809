// Test support: the base fixture of the tests that drive a real state store: a
// SQLite file ferry.db in a temp folder of the test's own (dir_), open as store_
// before the test body runs. Tests only; one thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "orchestrator/store.h"
#include "tests/support/process.h"

namespace ferry::testing {

class TempStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::open(dir_.file("ferry.db"));
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(s).value();
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

}  // namespace ferry::testing
