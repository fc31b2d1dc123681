// sequence_state.h: a prompt prefilled in batch A, every layer exported and imported into a
// fresh sequence of batch B, decodes in B exactly as in A (f32: bit-identical logits, so the
// same greedy tokens), for the hybrid (KDA + attention) and llama test models. Exports taken in
// the layer hook during the prefill equal the exports after it; malformed blocks are refused.
#include "engine/sequence_state.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/thread_pool.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

struct SeqStateModel {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model;
};

SeqStateModel seq_state_model(const ModelConfig& c) {
  SeqStateModel t;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 7});
  EXPECT_TRUE(w.has_value());
  t.storage = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(t.storage, "sequence_state.gguf")));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  t.model = std::move(*m);
  return t;
}

TokenId seq_state_argmax(std::span<const float> v) {
  return TokenId(std::max_element(v.begin(), v.end()) - v.begin());
}

// Greedy decode of `n` tokens from `logits` (the prompt's last logits) in `batch`; returns the
// tokens and appends every logit row to `rows`.
std::vector<TokenId> greedy(Batch& batch, SeqId seq, std::vector<float> logits, int n, std::vector<float>& rows) {
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) {
    TokenId t = seq_state_argmax(logits);
    out.push_back(t);
    BatchToken row{.seq = seq, .token = t, .want_logits = true};
    auto l = batch.forward(std::span<const BatchToken>(&row, 1));
    EXPECT_TRUE(l.has_value()) << l.error().message();
    logits.assign(l->begin(), l->end());
    rows.insert(rows.end(), logits.begin(), logits.end());
  }
  return out;
}

void check_round_trip(const ModelConfig& c, const Config& knobs) {
  SeqStateModel m = seq_state_model(c);
  auto pool = ThreadPool::create({.threads = 2});
  ASSERT_TRUE(pool.has_value());
  const BatchOptions o{.max_sequences = 2, .max_tokens = 40, .max_batch_tokens = 32};
  auto a = m.model->new_batch(**pool, o, knobs);
  auto b = m.model->new_batch(**pool, o, knobs);
  ASSERT_TRUE(a.has_value() && b.has_value());
  SeqId sa = *(*a)->add_sequence();
  ASSERT_TRUE((*b)->add_sequence().has_value());  // B's target is slot 1: slots need not match
  SeqId sb = *(*b)->add_sequence();

  // Prefill 21 tokens (two KV pages and a part), exporting each layer from the hook.
  std::vector<BatchToken> prompt;
  for (int i = 0; i < 21; ++i) prompt.push_back({.seq = sa, .token = TokenId((i * 37 + 11) % c.vocab)});
  prompt.back().want_logits = true;
  std::vector<std::vector<std::byte>> hooked(size_t(c.n_layers));
  (*a)->set_layer_hook([&](int layer) {
    auto n = layer_state_bytes(**a, sa, layer);
    ASSERT_TRUE(n.has_value()) << n.error().message();
    hooked[size_t(layer)].resize(*n);
    ASSERT_TRUE(export_layer_state(**a, sa, layer, hooked[size_t(layer)]).has_value());
  });
  auto logits = (*a)->forward(prompt);
  ASSERT_TRUE(logits.has_value()) << logits.error().message();
  (*a)->set_layer_hook(nullptr);
  std::vector<float> first(logits->begin(), logits->end());

  for (int l = 0; l < c.n_layers; ++l) {
    auto n = layer_state_bytes(**a, sa, l);
    ASSERT_TRUE(n.has_value());
    std::vector<std::byte> after(*n);
    ASSERT_TRUE(export_layer_state(**a, sa, l, after).has_value());
    EXPECT_EQ(after, hooked[size_t(l)]) << "layer " << l;
    auto s = import_layer_state(**b, sb, l, after);
    ASSERT_TRUE(s.has_value()) << s.error().message();
  }
  ASSERT_TRUE(set_sequence_position(**b, sb, 21).has_value());
  EXPECT_EQ((*b)->position(sb), 21);

  std::vector<float> rows_a, rows_b;
  std::vector<TokenId> ta = greedy(**a, sa, first, 8, rows_a);
  std::vector<TokenId> tb = greedy(**b, sb, first, 8, rows_b);
  EXPECT_EQ(ta, tb);
  EXPECT_EQ(rows_a, rows_b);  // f32 state: bit-identical
}

TEST(SequenceState, HybridRoundTripDecodesIdentically) {
  check_round_trip(testing::tiny_hybrid_config(0), Config());
}

TEST(SequenceState, LlamaRoundTripDecodesIdentically) { check_round_trip(testing::tiny_llama_config(), Config()); }

TEST(SequenceState, RefusesMalformedBlocksAndTensorParallel) {
  SeqStateModel m = seq_state_model(testing::tiny_hybrid_config(0));
  auto pool = ThreadPool::create({.threads = 2});
  ASSERT_TRUE(pool.has_value());
  const BatchOptions o{.max_sequences = 1, .max_tokens = 16, .max_batch_tokens = 16};
  auto b = m.model->new_batch(**pool, o, Config());
  ASSERT_TRUE(b.has_value());
  SeqId s = *(*b)->add_sequence();
  auto kda_bytes = layer_state_bytes(**b, s, 0);
  ASSERT_TRUE(kda_bytes.has_value());
  std::vector<std::byte> block(*kda_bytes);
  ASSERT_TRUE(export_layer_state(**b, s, 0, block).has_value());
  EXPECT_FALSE(import_layer_state(**b, s, 3, block).has_value());  // a KDA block into attention layer 3
  block[0] = std::byte{0};
  EXPECT_EQ(import_layer_state(**b, s, 0, block).error().code(), ErrorCode::kParse);
  EXPECT_FALSE(import_layer_state(**b, s, 0, std::span(block).first(8)).has_value());
  EXPECT_FALSE(export_layer_state(**b, s, 0, std::span(block).first(20)).has_value());
  EXPECT_FALSE(layer_state_bytes(**b, s, 9).has_value());
  EXPECT_FALSE(set_sequence_position(**b, s, 3).has_value());  // attention layer 3 holds 0 tokens

  Config tp2;
  ASSERT_TRUE(tp2.set("engine.tp", "2").has_value());
  auto t = m.model->new_batch(**pool, o, tp2);
  ASSERT_TRUE(t.has_value()) << t.error().message();
  SeqId ts = *(*t)->add_sequence();
  auto refused = layer_state_bytes(**t, ts, 0);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace recur
