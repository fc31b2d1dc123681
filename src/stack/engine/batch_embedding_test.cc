// BatchToken::embedding (model.h): a prompt fed as embedding rows equal to the token embedding
// rows gives exactly the logits of feeding the token ids (llama and hybrid), also mixed with
// token rows and other sequences in one forward; a different row changes the logits.
#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "engine/model.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "engine/weights.h"

namespace recur {
namespace {

struct EmbeddingCase {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model;
  std::vector<std::vector<float>> rows;  // the token embedding row of each prompt token
};

EmbeddingCase embedding_case(const ModelConfig& c, const std::vector<TokenId>& prompt) {
  EmbeddingCase t;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 9});
  EXPECT_TRUE(w.has_value());
  t.storage = w->serialize();
  auto file = gguf::parse(t.storage, "embed.gguf");
  EXPECT_TRUE(file.has_value());
  auto table = bind_weight(*file, "token_embd.weight", c.vocab, c.dim);
  EXPECT_TRUE(table.has_value()) << (table ? "" : table.error().message());
  for (TokenId id : prompt) {
    t.rows.emplace_back(size_t(c.dim));
    table->dequantize_row(id, t.rows.back().data());
  }
  auto m = model_from_file(std::move(*file));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  t.model = std::move(*m);
  return t;
}

std::vector<float> forward_all(Batch& batch, const std::vector<BatchToken>& rows) {
  auto logits = batch.forward(rows);
  EXPECT_TRUE(logits.has_value()) << (logits ? "" : logits.error().message());
  return logits ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>();
}

void expect_embeddings_equal_tokens(const ModelConfig& c) {
  const std::vector<TokenId> prompt = {5, 77, 301, 12, 12, 250, 9};
  EmbeddingCase t = embedding_case(c, prompt);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  const BatchOptions o{.max_sequences = 2, .max_tokens = 32, .max_batch_tokens = 32};
  auto by_ids = t.model->new_batch(**pool, o, Config());
  auto by_rows = t.model->new_batch(**pool, o, Config());
  ASSERT_TRUE(by_ids.has_value() && by_rows.has_value());
  SeqId a = *(*by_ids)->add_sequence(), b = *(*by_rows)->add_sequence();
  SeqId other = *(*by_rows)->add_sequence();
  std::vector<BatchToken> ids, rows;
  for (size_t i = 0; i < prompt.size(); ++i) {
    ids.push_back({.seq = a, .token = prompt[i], .want_logits = true});
    // Positions 1..4 as embeddings (token 0 is never looked up); the rest as ids.
    const bool image = i >= 1 && i <= 4;
    rows.push_back({.seq = b, .token = image ? 0 : prompt[i], .want_logits = true,
                    .embedding = image ? t.rows[i].data() : nullptr});
  }
  rows.insert(rows.begin() + 2, BatchToken{.seq = other, .token = 42, .want_logits = false});  // another sequence
  const std::vector<float> want = forward_all(**by_ids, ids);
  const std::vector<float> got = forward_all(**by_rows, rows);
  ASSERT_EQ(want.size(), prompt.size() * size_t(c.vocab));
  EXPECT_EQ(got, want);
  // Decoding on after the spliced prompt stays identical.
  const std::vector<float> next_a = forward_all(**by_ids, {{.seq = a, .token = 17, .want_logits = true}});
  const std::vector<float> next_b = forward_all(**by_rows, {{.seq = b, .token = 17, .want_logits = true}});
  EXPECT_EQ(next_a, next_b);
  // A different row is really used.
  std::vector<float> shifted = t.rows[0];
  for (float& v : shifted) v += 0.5f;
  SeqId d = *(*by_ids)->add_sequence();
  const std::vector<float> moved = forward_all(**by_ids, {{.seq = d, .token = prompt[0], .want_logits = true,
                                                          .embedding = shifted.data()}});
  EXPECT_NE(moved, std::vector<float>(want.begin(), want.begin() + c.vocab));
}

TEST(BatchEmbedding, LlamaRowsEqualTokenIds) { expect_embeddings_equal_tokens(testing::tiny_llama_config()); }
TEST(BatchEmbedding, HybridRowsEqualTokenIds) { expect_embeddings_equal_tokens(testing::tiny_hybrid_config(0)); }

}  // namespace
}  // namespace recur
