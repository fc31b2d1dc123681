// sequence_state.h: a prompt prefilled in batch A, every layer exported and imported into a
// fresh sequence of batch B, decodes in B exactly as in A (f32: bit-identical logits, so the
// same greedy tokens), for the hybrid (KDA + attention) and llama test models. Exports taken in
// the layer hook during the prefill equal the exports after it; malformed blocks are refused.
// Expert parallelism (engine.ep=2, tp=1): a state exported from an ep=2 batch equals the ep=1
// one and continues identically in fresh ep=2 and ep=1 batches (every rank's replica imported).
// MLA (deepseek2, kimi-linear): the latent cache's [latent ; rope key] per token round-trips the
// same way in every latent dtype (f32, bf16, fp8_e4m3, int8, and one per layer) and under ep=2.
#include "engine/sequence_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>

#include "core/thread_pool.h"
#include "engine/mla_test_models.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

using SeqStateModel = testing::SyntheticTestModel;
SeqStateModel seq_state_model(const ModelConfig& c) { return testing::synthetic_test_model(c, 7); }

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

// MLA latent caches: deepseek2 A (3 MLA layers), B (low-rank q, YaRN) and kimi-linear (KDA
// layers around one MLA layer).
TEST(SequenceState, MlaRoundTripDecodesIdentically) {
  for (const ModelConfig& c :
       {testing::deepseek2_shape_a(), testing::deepseek2_shape_b(), testing::kimi_linear_config()}) {
    SCOPED_TRACE(arch_name(c.arch));
    check_round_trip(c, Config(), {Config()});
  }
}

// Every dtype the latent cache stores: the blocks carry the dequantized values, and import
// quantizes them again to the same stored bytes (bf16 and fp8 at scale 1 exactly; int8 to the
// same codes and scale), so decode continues bit for bit; also one dtype per layer.
TEST(SequenceState, MlaRoundTripInEveryLatentDtype) {
  const ModelConfig c = testing::deepseek2_shape_a();
  for (const char* dtype : {"bf16", "fp8_e4m3", "int8"}) {
    SCOPED_TRACE(dtype);
    Config knobs;
    for (int l = 0; l < c.n_layers; ++l)
      ASSERT_TRUE(knobs.set(fmt::format("engine.kv_dtype.layer[{}]", l), dtype).has_value());
    check_round_trip(c, knobs, {knobs});
  }
  const Config mixed = seq_state_knobs(
      {{"engine.kv_dtype.layer[0]", "int8"}, {"engine.kv_dtype.layer[1]", "bf16"}, {"engine.kv_dtype.layer[2]", "fp8_e4m3"}});
  check_round_trip(c, mixed, {mixed});
  const Config kimi_int8 = seq_state_knobs({{"engine.kv_dtype.layer[2]", "int8"}});
  check_round_trip(testing::kimi_linear_config(), kimi_int8, {kimi_int8});
}

// kimi-linear's MoE (6 experts, sigmoid gating) at ep=2: its state continues in ep=2 and ep=1.
TEST(SequenceState, MlaExpertParallelRoundTripDecodesIdentically) {
  const Config ep2 = seq_state_knobs({{"engine.ep", "2"}});
  check_round_trip(testing::kimi_linear_config(), ep2, {ep2, Config()});
}

// A latent block is its own kind: it does not import into a KDA layer, nor does a KDA block into
// the MLA layer; ReplaySSM and tp > 1 (layer split included) are refused as for the hybrid.
TEST(SequenceState, MlaRefusesMismatchedBlocksAndReplay) {
  const ModelConfig c = testing::kimi_linear_config();  // "kkak"
  SeqStateModel m = seq_state_model(c);
  auto pool = ThreadPool::create({.threads = 2});
  ASSERT_TRUE(pool.has_value());
  const BatchOptions o{.max_sequences = 2, .max_tokens = 16, .max_batch_tokens = 16};
  auto b = m.model->new_batch(**pool, o, Config());
  ASSERT_TRUE(b.has_value());
  SeqId s = *(*b)->add_sequence(), fresh = *(*b)->add_sequence();
  std::vector<BatchToken> prompt;
  for (int i = 0; i < 3; ++i) prompt.push_back(seq_state_prompt_token(s, i, c.vocab));
  ASSERT_TRUE((*b)->forward(prompt).has_value());
  std::vector<std::vector<std::byte>> blocks;
  for (int l : {0, 2}) {
    auto n = layer_state_bytes(**b, s, l);
    ASSERT_TRUE(n.has_value()) << n.error().message();
    blocks.emplace_back(*n);
    ASSERT_TRUE(export_layer_state(**b, s, l, blocks.back()).has_value());
  }
  EXPECT_EQ(blocks[1].size(), kSequenceStateHeaderBytes + 3 * size_t(c.kv_lora_rank + c.qk_rope_dim) * sizeof(float));
  auto latent_into_kda = import_layer_state(**b, fresh, 0, blocks[1]);
  ASSERT_FALSE(latent_into_kda.has_value());
  EXPECT_EQ(latent_into_kda.error().code(), ErrorCode::kParse);
  auto kda_into_latent = import_layer_state(**b, fresh, 2, blocks[0]);
  ASSERT_FALSE(kda_into_latent.has_value());
  EXPECT_NE(kda_into_latent.error().message().find("MLA latent"), std::string::npos) << kda_into_latent.error().message();
  std::vector<std::byte> as_attention = blocks[1];
  as_attention[4] = std::byte{1};  // kind 1: a K+V attention block of the same bytes
  EXPECT_EQ(import_layer_state(**b, fresh, 2, as_attention).error().code(), ErrorCode::kParse);
  ASSERT_TRUE(import_layer_state(**b, fresh, 2, blocks[1]).has_value());
  for (const auto& [knob, value, says] : {std::tuple{"engine.tp", "2", "engine.tp>1"},
                                          std::tuple{"engine.kda.replay", "on", "engine.kda.replay=off"}}) {
    Config knobs = seq_state_knobs({{knob, value}});
    if (std::string(knob) == "engine.tp") {
      ASSERT_TRUE(knobs.set("engine.layer_split", "on").has_value());
    }
    auto refusing = m.model->new_batch(**pool, o, knobs);
    ASSERT_TRUE(refusing.has_value()) << refusing.error().message();
    SeqId rs = *(*refusing)->add_sequence();
    auto refused = layer_state_bytes(**refusing, rs, 2);
    ASSERT_FALSE(refused.has_value()) << knob;
    EXPECT_EQ(refused.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(refused.error().message().find(says), std::string::npos) << refused.error().message();
  }
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
