// sequence_state.h: a prompt prefilled in batch A, every layer exported and imported into a
// fresh sequence of batch B, decodes in B exactly as in A (f32: bit-identical logits, so the
// same greedy tokens), for the hybrid (KDA + attention) and llama test models. Exports taken in
// the layer hook during the prefill equal the exports after it; malformed blocks are refused.
// Expert parallelism (engine.ep=2, tp=1): a state exported from an ep=2 batch equals the ep=1
// one and continues identically in fresh ep=2 and ep=1 batches (every rank's replica imported).
#include "engine/sequence_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

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

Config seq_state_knobs(std::initializer_list<std::pair<const char*, const char*>> settings) {
  Config knobs;
  for (const auto& [name, value] : settings) EXPECT_TRUE(knobs.set(name, value).has_value()) << name;
  return knobs;
}

constexpr int kSeqStatePrompt = 21;  // two KV pages and a part

BatchToken seq_state_prompt_token(SeqId seq, int i, int vocab) {
  return {.seq = seq, .token = TokenId((i * 37 + 11) % vocab)};
}

// The continuation compared across batches: a 4-token chunk in one forward (with ep=2 rank 1
// owns rows 2-3, so its replica of the state is used), then greedy decode.
std::vector<TokenId> continue_sequence(Batch& batch, SeqId seq, int vocab, std::vector<float>& rows) {
  std::vector<BatchToken> chunk;
  for (int i = 0; i < 4; ++i) chunk.push_back(seq_state_prompt_token(seq, kSeqStatePrompt + i, vocab));
  chunk.back().want_logits = true;
  auto l = batch.forward(chunk);
  EXPECT_TRUE(l.has_value()) << l.error().message();
  if (!l) return {};
  std::vector<float> logits(l->begin(), l->end());
  rows.insert(rows.end(), logits.begin(), logits.end());
  return greedy(batch, seq, logits, 6, rows);
}

// Prefills the prompt in a fresh batch with `source` knobs, exporting each layer from the hook
// and again after the forward (they must agree); returns the blocks, the batch and the sequence.
struct SeqStatePrefilled {
  std::unique_ptr<Batch> batch;
  SeqId seq = -1;
  std::vector<float> logits;
  std::vector<std::vector<std::byte>> blocks;  // per layer
};

SeqStatePrefilled prefill_and_export(const ModelConfig& c, Model& model, ThreadPool& pool, const BatchOptions& o,
                                     const Config& source) {
  SeqStatePrefilled out;
  auto a = model.new_batch(pool, o, source);
  EXPECT_TRUE(a.has_value()) << a.error().message();
  if (!a) return out;
  out.batch = std::move(*a);
  Batch& batch = *out.batch;
  out.seq = *batch.add_sequence();
  std::vector<BatchToken> prompt;
  for (int i = 0; i < kSeqStatePrompt; ++i) prompt.push_back(seq_state_prompt_token(out.seq, i, c.vocab));
  prompt.back().want_logits = true;
  std::vector<std::vector<std::byte>> hooked(size_t(c.n_layers));
  batch.set_layer_hook([&](int layer) {
    auto n = layer_state_bytes(batch, out.seq, layer);
    ASSERT_TRUE(n.has_value()) << n.error().message();
    hooked[size_t(layer)].resize(*n);
    ASSERT_TRUE(export_layer_state(batch, out.seq, layer, hooked[size_t(layer)]).has_value());
  });
  auto logits = batch.forward(prompt);
  batch.set_layer_hook(nullptr);
  EXPECT_TRUE(logits.has_value()) << logits.error().message();
  if (!logits) return out;
  out.logits.assign(logits->begin(), logits->end());
  for (int l = 0; l < c.n_layers; ++l) {
    auto n = layer_state_bytes(batch, out.seq, l);
    EXPECT_TRUE(n.has_value());
    if (!n) return out;
    std::vector<std::byte> after(*n);
    EXPECT_TRUE(export_layer_state(batch, out.seq, l, after).has_value());
    EXPECT_EQ(after, hooked[size_t(l)]) << "layer " << l;
    out.blocks.push_back(std::move(after));
  }
  return out;
}

// Prefill with `source` knobs, import every layer into a fresh batch for each of `targets`,
// and continue all of them: tokens and logits must equal the source's own continuation.
void check_round_trip(const ModelConfig& c, const Config& source, const std::vector<Config>& targets) {
  SeqStateModel m = seq_state_model(c);
  auto pool = ThreadPool::create({.threads = 2});
  ASSERT_TRUE(pool.has_value());
  const BatchOptions o{.max_sequences = 2, .max_tokens = 40, .max_batch_tokens = 32};
  SeqStatePrefilled a = prefill_and_export(c, *m.model, **pool, o, source);
  ASSERT_TRUE(a.batch && int(a.blocks.size()) == c.n_layers);
  std::vector<float> rows_a;
  std::vector<TokenId> ta = continue_sequence(*a.batch, a.seq, c.vocab, rows_a);
  for (size_t i = 0; i < targets.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "target " << i);
    auto b = m.model->new_batch(**pool, o, targets[i]);
    ASSERT_TRUE(b.has_value()) << b.error().message();
    ASSERT_TRUE((*b)->add_sequence().has_value());  // B's target is slot 1: slots need not match
    SeqId sb = *(*b)->add_sequence();
    for (int l = 0; l < c.n_layers; ++l) {
      auto s = import_layer_state(**b, sb, l, a.blocks[size_t(l)]);
      ASSERT_TRUE(s.has_value()) << s.error().message();
    }
    ASSERT_TRUE(set_sequence_position(**b, sb, kSeqStatePrompt).has_value());
    EXPECT_EQ((*b)->position(sb), kSeqStatePrompt);
    std::vector<float> rows_b;
    std::vector<TokenId> tb = continue_sequence(**b, sb, c.vocab, rows_b);
    EXPECT_EQ(ta, tb);
    EXPECT_TRUE(rows_a == rows_b);  // f32 state: bit-identical
  }
}

TEST(SequenceState, HybridRoundTripDecodesIdentically) {
  check_round_trip(testing::tiny_hybrid_config(0), Config(), {Config()});
}

// qwen3next: gated DeltaNet layers (the KDA states) and gated attention layers (the KV cache).
TEST(SequenceState, Qwen3NextRoundTripDecodesIdentically) {
  check_round_trip(testing::tiny_qwen3next_config(), Config(), {Config()});
}

TEST(SequenceState, LlamaRoundTripDecodesIdentically) {
  check_round_trip(testing::tiny_llama_config(), Config(), {Config()});
}

// Hybrid MoE (4 experts, top-2) with engine.ep=2: the ranks replicate attention and KDA, so the
// state exported from rank 0 continues in fresh ep=2 (both replicas written) and ep=1 batches.
TEST(SequenceState, ExpertParallelRoundTripDecodesIdentically) {
  const Config ep2 = seq_state_knobs({{"engine.ep", "2"}});
  check_round_trip(testing::tiny_hybrid_config(4), ep2, {ep2, Config()});
}

TEST(SequenceState, ExpertParallelExportEqualsSingleRank) {
  const ModelConfig c = testing::tiny_hybrid_config(4);
  SeqStateModel m = seq_state_model(c);
  auto pool = ThreadPool::create({.threads = 2});
  ASSERT_TRUE(pool.has_value());
  const BatchOptions o{.max_sequences = 1, .max_tokens = 40, .max_batch_tokens = 32};
  SeqStatePrefilled ep1 = prefill_and_export(c, *m.model, **pool, o, Config());
  SeqStatePrefilled ep2 = prefill_and_export(c, *m.model, **pool, o, seq_state_knobs({{"engine.ep", "2"}}));
  ASSERT_EQ(ep1.blocks.size(), size_t(c.n_layers));
  EXPECT_TRUE(ep1.blocks == ep2.blocks);
  EXPECT_TRUE(ep1.logits == ep2.logits);
}

TEST(SequenceState, RefusesMalformedBlocksTensorParallelAndReplay) {
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

  // Refused configurations: their state is not one replicated copy of plain states.
  for (const auto& [knob, value, says] : {std::tuple{"engine.tp", "2", "engine.tp>1"},
                                          std::tuple{"engine.kda.replay", "on", "engine.kda.replay=off"}}) {
    auto refusing = m.model->new_batch(**pool, o, seq_state_knobs({{knob, value}}));
    ASSERT_TRUE(refusing.has_value()) << refusing.error().message();
    SeqId rs = *(*refusing)->add_sequence();
    auto refused = layer_state_bytes(**refusing, rs, 0);
    ASSERT_FALSE(refused.has_value()) << knob;
    EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(refused.error().message().find(says), std::string::npos) << refused.error().message();
  }
}

}  // namespace
}  // namespace recur
