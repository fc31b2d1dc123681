// The one batched forward (forward.h) on the hybrid: batched prefill and decode of several
// sequences equal each sequence run alone; sessions' prefill equals stepping; TP, MoE and
// ReplaySSM; errors leave every sequence as it was.
//
// Tolerances (max |a - b| over the logits, relative to max |b|): a batch against single-row
// steps differs only by summation order (batched GEMM tiles, paged prefill vs decode attention,
// KDA prefill vs decode): measured at most 3.6e-7 here (AVX-512), asserted 1e-5, which also
// bounds TP=P against TP=1 (as tensor_parallel_test) and ReplaySSM against the plain state
// (measured 2.7e-7); the chunked KDA prefill is held to docs/kda.md's 1e-4.
#include "engine/forward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "core/thread_pool.h"
#include "engine/sampler.h"
#include "engine/synthetic.h"
#include "engine/batch_scenario_test_util.h"
#include "engine/test_models.h"
#include "trace/trace.h"

namespace recur {
namespace {

struct TinyModel {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model;
};

TinyModel tiny_model(int experts, int context = 64, const char* layer_pattern = nullptr) {
  TinyModel t;
  ModelConfig c = testing::tiny_hybrid_config(experts);
  c.context = context;
  if (layer_pattern != nullptr) c.layer_pattern = layer_pattern;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 5});
  EXPECT_TRUE(w.has_value());
  t.storage = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(t.storage, "batch.gguf")));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  t.model = std::move(*m);
  return t;
}

Config knobs_of(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Config c;
  for (auto [k, v] : kv) EXPECT_TRUE(c.set(k, v).has_value()) << k;
  return c;
}

std::vector<TokenId> prompt(int n, int seed) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(TokenId((seed * 131 + i * 37 + 11) % 400));
  return p;
}

double rel_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0, s = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    d = std::max(d, double(std::fabs(a[i] - b[i])));
    s = std::max(s, double(std::fabs(b[i])));
  }
  return d / std::max(s, 1e-30);
}

using testing::ScenarioLog;

// Three sequences of 5, 11 and 17 prompt tokens, then D of 9 (batch_scenario_test_util.h), 6
// decode steps each side.
ScenarioLog run_scenario(const Model& model, ThreadPool& pool, const Config& knobs) {
  auto made = model.new_batch(pool, {.max_sequences = 3, .max_tokens = 40, .max_batch_tokens = 48}, knobs);
  EXPECT_TRUE(made.has_value()) << (made ? "" : made.error().message());
  if (!made) return {};
  return testing::run_batch_scenario(**made, model.config().vocab, {prompt(5, 1), prompt(11, 2), prompt(17, 3),
                                                                     prompt(9, 4)}, 6);
}

// Each stream's tokens stepped alone in a session; the worst logit difference at the logged
// positions, and whether every logged argmax agrees.
double worst_against_alone(const Model& model, ThreadPool& pool, const Config& knobs, const ScenarioLog& log,
                           bool* argmax_equal) {
  double worst = 0;
  *argmax_equal = true;
  for (const auto& [name, s] : log) {
    auto session = model.new_session(pool, 40, knobs);
    EXPECT_TRUE(session.has_value());
    for (size_t p = 0; p < s.tokens.size(); ++p) {
      auto logits = (*session)->step(s.tokens[p]);
      EXPECT_TRUE(logits.has_value());
      auto it = s.logits.find(int(p));
      if (it == s.logits.end()) continue;
      worst = std::max(worst, rel_diff(it->second, *logits));
      *argmax_equal = *argmax_equal && argmax(it->second) == argmax(*logits);
    }
  }
  return worst;
}

double worst_between(const ScenarioLog& a, const ScenarioLog& b) {
  double worst = 0;
  for (const auto& [name, s] : b) {
    EXPECT_EQ(a.at(name).tokens, s.tokens) << "stream " << name << ": greedy tokens differ";
    for (const auto& [pos, logits] : s.logits) worst = std::max(worst, rel_diff(a.at(name).logits.at(pos), logits));
  }
  return worst;
}

TEST(HybridBatch, ThreeSequencesTogetherEqualEachAlone) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (int experts : {0, 4}) {
    TinyModel t = tiny_model(experts);
    const Config knobs;
    ScenarioLog log = run_scenario(*t.model, **pool, knobs);
    bool same = false;
    const double worst = worst_against_alone(*t.model, **pool, knobs, log, &same);
    EXPECT_TRUE(same) << "experts " << experts;
    EXPECT_LT(worst, 1e-5) << "experts " << experts;
  }
}

TEST(HybridBatch, ChunkedKdaPrefillMatchesStepping) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  TinyModel t = tiny_model(0);
  const Config knobs = knobs_of({{"engine.kda.prefill_variant", "chunked16"}});
  ScenarioLog log = run_scenario(*t.model, **pool, knobs);
  bool same = false;
  EXPECT_LT(worst_against_alone(*t.model, **pool, knobs, log, &same), 1e-4);
  EXPECT_TRUE(same);
}

TEST(HybridBatch, TensorParallelBatchesEqualTp1) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (int experts : {0, 4}) {
    TinyModel t = tiny_model(experts);
    ScenarioLog base = run_scenario(*t.model, **pool, Config());
    for (const char* tp : {"2", "4"}) {
      ScenarioLog got = run_scenario(*t.model, **pool, knobs_of({{"engine.tp", tp}}));
      EXPECT_LT(worst_between(got, base), 1e-5) << "tp " << tp << " experts " << experts;
    }
  }
}

// Layer split: each attention layer whole on one rank. "kaka" puts the two attention layers on
// ranks 0 and 1, so at TP=4 ranks 2 and 3 hold no KV at all; "kkka" at TP=2 leaves rank 1 none.
TEST(HybridBatch, LayerSplitBatchesEqualTp1) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (auto [experts, pattern] : {std::pair{0, "kaka"}, std::pair{4, "kkka"}}) {
    TinyModel t = tiny_model(experts, 64, pattern);
    ScenarioLog base = run_scenario(*t.model, **pool, Config());
    for (const char* tp : {"2", "4"}) {
      ScenarioLog got = run_scenario(*t.model, **pool, knobs_of({{"engine.tp", tp}, {"engine.layer_split", "on"}}));
      EXPECT_LT(worst_between(got, base), 1e-5) << "tp " << tp << " pattern " << pattern;
    }
  }
}

// The KV pools: with layer split the ranks hold each attention layer once (no replicated KV
// heads), a rank its own layers only; pages count alike in both layouts; at TP=1 it is a no-op.
TEST(HybridBatch, LayerSplitPartitionsTheKvByLayer) {
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  TinyModel t = tiny_model(0, 64, "aaaa");  // 4 attention layers of 2 KV heads
  const BatchOptions small{.max_sequences = 2, .max_tokens = 40, .max_batch_tokens = 40};
  auto pools_of = [&](const char* tp, const char* split, int64_t* pages_used) {
    auto made = t.model->new_batch(**pool, small, knobs_of({{"engine.tp", tp}, {"engine.layer_split", split}}));
    EXPECT_TRUE(made.has_value()) << (made ? "" : made.error().message());
    auto* batch = dynamic_cast<Forward*>(made->get());
    EXPECT_NE(batch, nullptr);
    const SeqId s = *batch->add_sequence();
    std::vector<BatchToken> rows;
    for (TokenId tok : prompt(20, 1)) rows.push_back({.seq = s, .token = tok});
    EXPECT_TRUE(batch->forward(rows).has_value());
    *pages_used = batch->kv_usage().pages_used;
    EXPECT_EQ(batch->kv_usage().pages_total, 2 * batch_kv_pages_for(40));
    return batch->kv_bytes_per_rank();
  };
  int64_t used_base = 0, used = 0;
  const std::vector<int64_t> base = pools_of("1", "off", &used_base);
  ASSERT_EQ(base.size(), 1u);
  EXPECT_EQ(used_base, 2) << "20 tokens: 2 pages";
  EXPECT_EQ(pools_of("1", "on", &used), base) << "a no-op at TP=1";
  for (int tp : {2, 4}) {
    const std::string tps = std::to_string(tp);
    const std::vector<int64_t> split = pools_of(tps.c_str(), "on", &used);
    EXPECT_EQ(used, used_base) << "tp " << tp;
    ASSERT_EQ(split.size(), size_t(tp));
    for (int64_t b : split) EXPECT_EQ(b * tp, base[0]) << "tp " << tp << ": a rank holds its 4/tp layers whole";
    const std::vector<int64_t> heads = pools_of(tps.c_str(), "off", &used);
    // Head split: a rank holds every layer's min(tp, 2)-th share of the KV heads; past 2 ranks
    // the KV heads are replicated, so layer split halves a rank's pool at TP=4.
    for (int64_t b : heads) EXPECT_EQ(b * std::min(tp, 2), base[0]) << "tp " << tp;
  }
}

TEST(HybridBatch, ReplaySsmEqualsThePlainState) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  TinyModel t = tiny_model(0);
  ScenarioLog plain = run_scenario(*t.model, **pool, Config());
  // Window 4: the 12 decode steps fold the buffer into the checkpoint several times.
  for (const char* window : {"4", "16"}) {
    ScenarioLog replay =
        run_scenario(*t.model, **pool, knobs_of({{"engine.kda.replay", "on"}, {"engine.kda.replay_window", window}}));
    EXPECT_LT(worst_between(replay, plain), 1e-5) << "window " << window;
  }
}

// engine.kv_dtype.layer[3] (the tiny model's attention layer): the paged prefill and decode
// kernels read the same stored values, but K and V differ between batch and alone by summation
// order, which can move an element across a rounding boundary of the cache's type: one step of
// bf16 (2^-8 relative) or of int8 (1/127 of the head's amax). So the bounds are 1e-4 and 1e-3
// (int8 measured 5.7e-5); the quantization itself moves the logits by less than 2e-2.
TEST(HybridBatch, QuantizedKvCacheBatchesEqualEachAlone) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  TinyModel t = tiny_model(0);
  ScenarioLog f32 = run_scenario(*t.model, **pool, Config());
  for (auto [dtype, bound] : {std::pair{"bf16", 1e-4}, std::pair{"int8", 1e-3}}) {
    const Config knobs = knobs_of({{"engine.kv_dtype.layer[3]", dtype}});
    ScenarioLog log = run_scenario(*t.model, **pool, knobs);
    bool same = false;
    EXPECT_LT(worst_against_alone(*t.model, **pool, knobs, log, &same), bound) << dtype;
    EXPECT_TRUE(same) << dtype;
    const double moved = rel_diff(log['A'].logits.begin()->second, f32['A'].logits.begin()->second);
    EXPECT_GT(moved, 0) << dtype << " changes what attention reads";
    EXPECT_LT(moved, 2e-2) << dtype;
  }
  Config bad;
  EXPECT_FALSE(bad.set("engine.kv_dtype.layer[3]", "fp4").has_value());
}

TEST(HybridBatch, SessionPrefillEqualsStepping) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  TinyModel t = tiny_model(4);
  const std::vector<TokenId> p = prompt(30, 9);
  for (const char* variant : {"recurrent", "chunked64"}) {
    const Config knobs = knobs_of({{"engine.kda.prefill_variant", variant}});
    auto stepped = t.model->new_session(**pool, 40, knobs);
    auto prefilled = t.model->new_session(**pool, 40, knobs);
    ASSERT_TRUE(stepped.has_value() && prefilled.has_value());
    std::vector<float> want;
    for (TokenId tok : p) {
      auto l = (*stepped)->step(tok);
      ASSERT_TRUE(l.has_value());
      want.assign(l->begin(), l->end());
    }
    auto got = (*prefilled)->prefill(p);
    ASSERT_TRUE(got.has_value()) << got.error().message();
    EXPECT_EQ((*prefilled)->position(), 30);
    EXPECT_LT(rel_diff(*got, want), variant[0] == 'r' ? 1e-5 : 1e-4) << variant;
    // Decoding continues from the same state.
    for (int i = 0; i < 4; ++i) {
      const TokenId next = argmax(want);
      auto a = (*stepped)->step(next);
      auto b = (*prefilled)->step(next);
      ASSERT_TRUE(a.has_value() && b.has_value());
      EXPECT_EQ(argmax(*a), argmax(*b));
      EXPECT_LT(rel_diff(*b, *a), 1e-4) << variant;
      want.assign(a->begin(), a->end());
    }
  }
}

// A session prefills in forwards of at most 256 tokens: a 300-token prompt is two, and the
// first wants no logits (its LM head is skipped).
TEST(HybridBatch, SessionPrefillLongerThanAForwardEqualsStepping) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  TinyModel t = tiny_model(0, 320);
  std::vector<TokenId> p;
  for (int i = 0; i < 6; ++i) {
    const std::vector<TokenId> part = prompt(50, 20 + i);
    p.insert(p.end(), part.begin(), part.end());
  }
  auto stepped = t.model->new_session(**pool, 310, Config());
  auto prefilled = t.model->new_session(**pool, 310, Config());
  ASSERT_TRUE(stepped.has_value() && prefilled.has_value());
  std::vector<float> want;
  for (TokenId tok : p) {
    auto l = (*stepped)->step(tok);
    ASSERT_TRUE(l.has_value());
    want.assign(l->begin(), l->end());
  }
  auto got = (*prefilled)->prefill(p);
  ASSERT_TRUE(got.has_value()) << got.error().message();
  EXPECT_EQ((*prefilled)->position(), 300);
  EXPECT_LT(rel_diff(*got, want), 1e-5);
  EXPECT_FALSE((*prefilled)->prefill(prompt(11, 1)).has_value()) << "310 tokens at most";
  EXPECT_EQ((*prefilled)->position(), 300);
}

TEST(HybridBatch, ErrorsLeaveEverySequenceAsItWas) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  TinyModel t = tiny_model(0);
  // 3 pages of 16 tokens for two sequences of up to 20.
  const Config knobs = knobs_of({{"engine.hybrid.kv_pages", "3"}});
  auto made = t.model->new_batch(**pool, {.max_sequences = 2, .max_tokens = 20, .max_batch_tokens = 8}, knobs);
  ASSERT_TRUE(made.has_value()) << made.error().message();
  Batch& batch = **made;
  const SeqId a = *batch.add_sequence(), b = *batch.add_sequence();
  EXPECT_FALSE(batch.add_sequence().has_value()) << "max_sequences are live";
  std::map<SeqId, std::vector<TokenId>> fed;
  auto rows_of = [](SeqId s, const std::vector<TokenId>& toks) {
    std::vector<BatchToken> rows;
    for (TokenId tok : toks) rows.push_back({.seq = s, .token = tok, .want_logits = false});
    rows.back().want_logits = true;
    return rows;
  };
  auto feed = [&](SeqId s, const std::vector<TokenId>& toks) {
    auto l = batch.forward(rows_of(s, toks));
    ASSERT_TRUE(l.has_value()) << l.error().message();
    fed[s].insert(fed[s].end(), toks.begin(), toks.end());
  };
  feed(a, prompt(8, 1));
  feed(b, prompt(8, 2));
  feed(a, prompt(8, 3));
  feed(a, prompt(1, 4));
  feed(b, prompt(1, 6));  // a: 17 tokens, 2 pages; b: 9 tokens, 1 page
  EXPECT_EQ(batch.kv_usage().pages_used, 3);
  auto fails = [&](std::vector<BatchToken> rows, ErrorCode code, const char* what) {
    const int pos_a = batch.position(a), pos_b = batch.position(b);
    const int64_t pages = batch.kv_usage().pages_used;
    auto r = batch.forward(rows);
    ASSERT_FALSE(r.has_value()) << what;
    EXPECT_EQ(r.error().code(), code) << what << ": " << r.error().message();
    EXPECT_EQ(batch.position(a), pos_a) << what;
    EXPECT_EQ(batch.position(b), pos_b) << what;
    EXPECT_EQ(batch.kv_usage().pages_used, pages) << what;
  };
  std::vector<BatchToken> nine = rows_of(b, prompt(9, 5));
  fails(nine, ErrorCode::kInvalidArgument, "more than max_batch_tokens");
  std::vector<BatchToken> pool_out = rows_of(b, prompt(8, 5));  // b would need a 4th page
  fails(pool_out, ErrorCode::kFailedPrecondition, "KV pool exhausted");
  std::vector<BatchToken> full = rows_of(a, prompt(4, 5));       // a would hold 21 > 20
  full.insert(full.begin(), {.seq = b, .token = 3, .want_logits = true});
  fails(full, ErrorCode::kInvalidArgument, "past max_tokens");
  fails({{.seq = b, .token = 3}, {.seq = 7, .token = 3}}, ErrorCode::kNotFound, "unknown sequence");
  fails({{.seq = a, .token = 3}, {.seq = b, .token = 400}}, ErrorCode::kInvalidArgument, "token outside the vocabulary");
  EXPECT_FALSE(batch.free_sequence(7).has_value());
  // After the errors both sequences continue as if nothing happened.
  const std::vector<BatchToken> next = {{.seq = a, .token = 42, .want_logits = true},
                                        {.seq = b, .token = 43, .want_logits = true}};
  auto l = batch.forward(next);
  ASSERT_TRUE(l.has_value()) << l.error().message();
  fed[a].push_back(42);
  fed[b].push_back(43);
  const size_t vocab = size_t(t.model->config().vocab);
  for (int i = 0; i < 2; ++i) {
    auto session = t.model->new_session(**pool, 20, Config());
    ASSERT_TRUE(session.has_value());
    auto want = (*session)->prefill(fed[i == 0 ? a : b]);
    ASSERT_TRUE(want.has_value());
    EXPECT_LT(rel_diff(l->subspan(size_t(i) * vocab, vocab), *want), 1e-5) << "sequence " << i;
  }
  // A freed sequence is unknown; its pages are free again.
  ASSERT_TRUE(batch.free_sequence(a).has_value());
  EXPECT_EQ(batch.position(a), -1);
  EXPECT_EQ(batch.kv_usage().pages_used, 1);
  fails({{.seq = a, .token = 3}}, ErrorCode::kNotFound, "freed sequence");
}

// The paged kernels need a rank's query heads to split evenly over its KV heads: 6 heads on 3
// KV heads at TP=2 gives rank 0 heads 0-2 on KV heads 0-1 (2 + 1), which is refused by name.
TEST(HybridBatch, TensorParallelRefusesUnevenHeadGroups) {
  ModelConfig c = testing::tiny_hybrid_config(0);
  c.n_heads = 6;
  c.n_kv_heads = 3;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 5});
  ASSERT_TRUE(w.has_value()) << w.error().message();
  std::vector<std::byte> bytes = w->serialize();
  auto model = model_from_file(std::move(*gguf::parse(bytes, "uneven.gguf")));
  ASSERT_TRUE(model.has_value()) << model.error().message();
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  const BatchOptions small{.max_sequences = 1, .max_tokens = 16, .max_batch_tokens = 16};
  auto b = (*model)->new_batch(**pool, small, knobs_of({{"engine.tp", "2"}}));
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message().find("rank 0's attention heads [0, 3)"), std::string::npos) << b.error().message();
  EXPECT_TRUE((*model)->new_batch(**pool, small, Config()).has_value()) << "TP=1 runs it";
}

// A decode step on a pool computes the projections of one input in one parallel region
// (blocks/projections.cc): one matvec zone for a KDA layer's six, attention's three, the FFN's
// gate and up; each row still whole on one thread, so the logits have the bits of a
// one-thread pool, which runs every projection on its own (as the KDA convolutions, whose
// channels a pool splits: hybrid_kda.cc).
TEST(HybridBatch, FusedDecodeProjectionsKeepTheBitsOfOneThread) {
  TinyModel t = tiny_model(4);
  auto decode = [&](int threads, std::vector<int64_t>* fused) {
    auto pool = ThreadPool::create({.threads = threads, .pin = false});
    EXPECT_TRUE(pool.has_value());
    auto session = t.model->new_session(**pool, 32, Config());
    EXPECT_TRUE(session.has_value()) << session.error().message();
    std::vector<float> all;
    auto logits = (*session)->prefill(prompt(5, 3));
    EXPECT_TRUE(logits.has_value());
    all.assign(logits->begin(), logits->end());
    trace::reset();
    trace::set_enabled(true);
    for (TokenId tok : {7, 8, 9}) {
      logits = (*session)->step(tok);
      EXPECT_TRUE(logits.has_value());
      all.insert(all.end(), logits->begin(), logits->end());
    }
    trace::set_enabled(false);
    const trace::EventTable table = trace::capture();
    for (size_t i = 0; i < table.size(); ++i)
      if (auto n = table.int_arg(i, "fused"); n && table.name(i) == "matvec") fused->push_back(*n);
    return all;
  };
  std::vector<int64_t> one_fused, three_fused;
  const std::vector<float> one = decode(1, &one_fused), three = decode(3, &three_fused);
  ASSERT_EQ(one.size(), three.size());
  EXPECT_EQ(std::memcmp(one.data(), three.data(), one.size() * sizeof(float)), 0) << "the bits depend on the pool";
  EXPECT_TRUE(one_fused.empty()) << "one thread runs each projection on its own";
  std::map<int64_t, int> groups;  // projections per group -> groups over the 3 steps
  for (int64_t n : three_fused) ++groups[n];
  const ModelConfig& c = t.model->config();
  int kda = 0, expert_calls = 0;
  for (int l = 0; l < c.n_layers; ++l) kda += c.is_kda_layer(l) ? 1 : 0;
  expert_calls = c.n_layers * c.n_experts_used + (c.shared_expert ? c.n_layers : 0);
  EXPECT_EQ(groups[6], 3 * kda);
  EXPECT_EQ(groups[3], 3 * (c.n_layers - kda));
  EXPECT_EQ(groups[2], 3 * expert_calls) << "each routed (and shared) expert's gate and up";
}

TEST(HybridBatch, Float64ReferenceRunsOneSequenceOnly) {
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  TinyModel t = tiny_model(0);
  auto b = t.model->new_batch(**pool, {}, knobs_of({{"engine.numerics", "f64_reference"}}));
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace recur
