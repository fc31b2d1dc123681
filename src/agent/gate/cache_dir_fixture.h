// Test fixture: a suite whose synthetic models (engine/model_cache.h) go to a fresh
// RECUR_CACHE_DIR, removed after the suite.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace recur::gate {

class CacheDirSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/recur-gate-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    cache_dir_ = new std::string(tmpl);
    setenv("RECUR_CACHE_DIR", cache_dir_->c_str(), 1);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*cache_dir_);
    delete cache_dir_;
    cache_dir_ = nullptr;
  }
  static inline std::string* cache_dir_ = nullptr;
};

}  // namespace recur::gate
