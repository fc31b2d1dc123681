// engine.weights_memory: a model read into anonymous memory runs exactly as the mapped file,
// and a truncated file fails the same way in both modes (docs/engine.md "Weights in memory").
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

class WeightsMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("recur_weights_memory_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "tiny.gguf").string();
    SyntheticModelOptions o{.config = testing::tiny_llama_config(), .dtype = gguf::TensorType::kF16, .seed = 7};
    ASSERT_TRUE(write_synthetic_model(o, path_).has_value());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Logits of 6 steps, concatenated, with the model loaded as `memory` says.
  std::vector<float> logits_with(const std::string& memory) {
    Config knobs;
    EXPECT_TRUE(knobs.set("engine.weights_memory", memory).has_value());
    auto model = load_model(path_, knobs);
    EXPECT_TRUE(model.has_value()) << model.error().message();
    auto pool = ThreadPool::create({.threads = 2, .pin = false});
    auto session = (*model)->new_session(**pool, 16, knobs);
    EXPECT_TRUE(session.has_value()) << session.error().message();
    std::vector<float> all;
    for (TokenId t : {1, 300, 17, 42, 399, 5}) {
      auto logits = (*session)->step(t);
      EXPECT_TRUE(logits.has_value());
      all.insert(all.end(), logits->begin(), logits->end());
    }
    return all;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(WeightsMemory, AnonymousCopyGivesTheMappedFilesLogitsBitForBit) {
  const std::vector<float> mapped = logits_with("mmap"), copied = logits_with("anon");
  ASSERT_EQ(mapped.size(), copied.size());
  EXPECT_EQ(std::memcmp(mapped.data(), copied.data(), mapped.size() * sizeof(float)), 0);
}

TEST_F(WeightsMemory, AnonymousCopyHoldsTheFileAndReleasesPagesBackToIt) {
  auto copy = MappedFile::open(path_, FileMemory::kAnonymous);
  ASSERT_TRUE(copy.has_value()) << copy.error().message();
  ASSERT_TRUE(copy->anonymous());  // a tiny file always fits
  auto mapped = MappedFile::open(path_);
  ASSERT_TRUE(mapped.has_value());
  EXPECT_FALSE(mapped->anonymous());
  ASSERT_EQ(copy->size(), mapped->size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy->bytes().data()) % (size_t(2) << 20), 0u);
  EXPECT_EQ(std::memcmp(copy->bytes().data(), mapped->bytes().data(), copy->size()), 0);
  // Tensor parallelism releases copied weights: the file's pages replace the copy, same bytes.
  auto released = copy->release_pages(copy->bytes().data() + 100, copy->size() - 200);
  ASSERT_TRUE(released.has_value()) << released.error().message();
  EXPECT_GT(*released, 0u);
  EXPECT_EQ(std::memcmp(copy->bytes().data(), mapped->bytes().data(), copy->size()), 0);
}

TEST_F(WeightsMemory, TruncatedFileIsNamedInBothModes) {
  const auto size = std::filesystem::file_size(path_);
  const std::string cut = (dir_ / "cut.gguf").string();
  std::filesystem::copy_file(path_, cut);
  std::filesystem::resize_file(cut, size - 1000);
  for (FileMemory memory : {FileMemory::kMap, FileMemory::kAnonymous}) {
    auto f = gguf::read(cut, memory);
    ASSERT_FALSE(f.has_value());
    const std::string& msg = f.error().message();
    EXPECT_NE(msg.find("cut.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find("output.weight"), std::string::npos) << msg;  // the last tensor
    EXPECT_NE(msg.find("past the end"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace recur
