// deepseek2 and kimi-linear (MLA + MoE; mla_test_models.h) under the parallel layouts the hybrid
// runs, each against one rank on the same batch scenario (two sequences prefilled interleaved in
// one forward, then greedy decode of both together):
//   - expert parallelism with deepseek2's gating (softmax; sigmoid + exp_probs_b, renormalized,
//     scaled; shared experts; a leading dense layer): one sequence bit for bit at tp = 1 (as the
//     hybrid's EP tests hold), two within 1e-5, both dispatch modes; tp = ep = 2 within 1e-5 of
//     tp = 2;
//   - layer split of MLA layers (each layer whole on its owner): within 1e-5 of tp = 1 (the
//     hybrid's layer-split bound), and each rank's latent cache holds only its own layers;
//   - per-layer KV dtypes of the latent caches (engine.kv_dtype.layer[N]) act and are read only
//     for MLA layers; ReplaySSM acts on kimi-linear's KDA layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "core/thread_pool.h"
#include "engine/forward.h"
#include "engine/mla_test_models.h"

namespace recur {
namespace {

using MlaModel = testing::SyntheticTestModel;
MlaModel mla_model(const ModelConfig& c) { return testing::synthetic_test_model(c, 5); }

Config mla_knobs(std::initializer_list<std::pair<const char*, const char*>> settings) {
  Config knobs;
  for (const auto& [name, value] : settings) EXPECT_TRUE(knobs.set(name, value).has_value()) << name;
  return knobs;
}

// Every logit row of a scenario (the prefill's rows, then each decode step's) and the greedy
// tokens each run picked for itself.
struct MlaRun {
  std::vector<std::vector<float>> rows;
  std::vector<TokenId> tokens;
};

TokenId mla_argmax(std::span<const float> x) { return TokenId(std::max_element(x.begin(), x.end()) - x.begin()); }

// Two sequences (prompts of 7 and 3 tokens) prefilled interleaved in one forward, then decoded
// together; or one sequence of an 8-token prompt, then decoded alone.
const std::vector<std::vector<TokenId>> kTwoSequences = {{5, 17, 230, 8, 99, 3, 41}, {300, 2, 64}};
const std::vector<std::vector<TokenId>> kOneSequence = {{5, 17, 230, 8, 99, 3, 41, 12}};

MlaRun run_scenario(const Model& m, ThreadPool& pool, const Config& knobs,
                    const std::vector<std::vector<TokenId>>& prompts = kTwoSequences) {
  MlaRun run;
  auto made = m.new_batch(pool, {.max_sequences = 2, .max_tokens = 32, .max_batch_tokens = 32}, knobs);
  EXPECT_TRUE(made.has_value()) << made.error().message();
  if (!made) return run;
  Batch& batch = **made;
  std::vector<SeqId> seqs;
  for (size_t q = 0; q < prompts.size(); ++q) seqs.push_back(*batch.add_sequence());
  std::vector<BatchToken> toks;
  std::vector<size_t> order;  // the sequence of each logit row, in the caller's order of want_logits
  for (size_t i = 0; i < 8; ++i)  // interleaved, the last token of each wanting logits
    for (size_t q = 0; q < prompts.size(); ++q)
      if (i < prompts[q].size()) {
        toks.push_back({.seq = seqs[q], .token = prompts[q][i], .want_logits = i + 1 == prompts[q].size()});
        if (toks.back().want_logits) order.push_back(q);
      }
  const size_t V = size_t(m.config().vocab);
  for (int step = 0; step < 7; ++step) {
    auto logits = batch.forward(toks);
    EXPECT_TRUE(logits.has_value()) << logits.error().message();
    if (!logits) return run;
    toks.clear();
    std::vector<TokenId> next(prompts.size());
    for (size_t row = 0; row < order.size(); ++row) {
      std::span<const float> x = logits->subspan(row * V, V);
      run.rows.emplace_back(x.begin(), x.end());
      run.tokens.push_back(next[order[row]] = mla_argmax(x));
    }
    order.clear();
    for (size_t q = 0; q < prompts.size(); ++q) {
      toks.push_back({.seq = seqs[q], .token = next[q], .want_logits = true});
      order.push_back(q);
    }
  }
  return run;
}

// The same greedy tokens, and every logit within tol * max(1, max |logit|) of the baseline's
// (tol 0: the same bits).
void expect_same_run(const MlaRun& want, const MlaRun& got, double tol, const std::string& what) {
  ASSERT_EQ(want.rows.size(), got.rows.size()) << what;
  EXPECT_EQ(want.tokens, got.tokens) << what;
  for (size_t i = 0; i < want.rows.size(); ++i) {
    if (tol == 0) {
      EXPECT_TRUE(want.rows[i] == got.rows[i]) << what << ": row " << i << " differs in its bits";
      continue;
    }
    double err = 0, scale = 1;
    for (size_t v = 0; v < want.rows[i].size(); ++v) {
      err = std::max(err, std::fabs(double(want.rows[i][v]) - got.rows[i][v]));
      scale = std::max(scale, std::fabs(double(want.rows[i][v])));
    }
    EXPECT_LE(err, tol * scale) << what << ": row " << i;
  }
}

struct MlaCase {
  const char* name;
  ModelConfig config;
};

std::vector<MlaCase> mla_cases() {
  return {{"deepseek2 A (softmax, shared expert, leading dense)", testing::deepseek2_shape_a()},
          {"deepseek2 B (sigmoid + exp_probs_b, renormalized, scaled, 2 shared)", testing::deepseek2_shape_b()},
          {"kimi-linear (KDA + MLA, sigmoid + exp_probs_b)", testing::kimi_linear_config()}};
}

// EP routes with the model's own gating (blocks/moe_gating.cc), so the experts each rank runs
// and the weights it combines with are one rank's. One sequence (8-row prefill, then one row a
// step) gives the same bits at tp = 1, as the hybrid's EP tests hold; two sequences decoding
// together are within 1e-5 with the same tokens (a rank's shared expert then runs on 1 of the
// 2 rows, and the one-row GEMV and two-row GEMM add in different orders; the hybrid does the same).
TEST(MlaParallel, ExpertParallelEqualsOneRankWithDeepseek2Gating) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (const MlaCase& t : mla_cases()) {
    MlaModel m = mla_model(t.config);
    ASSERT_TRUE(m.model) << t.name;
    const MlaRun one = run_scenario(*m.model, **pool, Config(), kOneSequence);
    const MlaRun two = run_scenario(*m.model, **pool, Config());
    std::vector<std::pair<std::string, Config>> layouts;
    for (const char* mode : {"normal", "low_latency"})
      layouts.emplace_back(fmt::format("ep=2 {}", mode), mla_knobs({{"engine.ep", "2"}, {"engine.ep.dispatch_mode", mode}}));
    if (t.config.n_experts % 4 == 0) layouts.emplace_back("ep=4", mla_knobs({{"engine.ep", "4"}}));
    for (const auto& [name, knobs] : layouts) {
      expect_same_run(one, run_scenario(*m.model, **pool, knobs, kOneSequence), 0, fmt::format("{} {} one", t.name, name));
      expect_same_run(two, run_scenario(*m.model, **pool, knobs), 1e-5, fmt::format("{} {} two", t.name, name));
    }
    if (t.config.n_heads % 2 == 0) {
      // tp = ep = 2: TP shards the experts' columns, EP holds them whole (summation order).
      const MlaRun tp2 = run_scenario(*m.model, **pool, mla_knobs({{"engine.tp", "2"}}));
      const MlaRun both = run_scenario(*m.model, **pool, mla_knobs({{"engine.tp", "2"}, {"engine.ep", "2"}}));
      expect_same_run(tp2, both, 1e-5, fmt::format("{} tp=2 ep=2 against tp=2", t.name));
      EXPECT_EQ(two.tokens, both.tokens) << t.name;
    }
  }
}

// Layer split: each MLA layer whole on rank (its index among the attention layers) mod tp, which
// alone keeps its latent cache; KDA layers and FFNs stay split. Shape B's 3 heads do not split
// over 2 ranks, but its layers do.
TEST(MlaParallel, LayerSplitEqualsOneRank) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (const MlaCase& t : mla_cases()) {
    MlaModel m = mla_model(t.config);
    ASSERT_TRUE(m.model) << t.name;
    const MlaRun one = run_scenario(*m.model, **pool, Config());
    for (const char* tp : {"2", "4"}) {
      const Config knobs = mla_knobs({{"engine.tp", tp}, {"engine.layer_split", "on"}});
      expect_same_run(one, run_scenario(*m.model, **pool, knobs), 1e-5, fmt::format("{} tp={} layer split", t.name, tp));
    }
  }
}

// Head split replicates the latent cache on every rank (each holds every layer's); layer split
// keeps each layer's on its owner only: deepseek2 A (3 MLA layers) at tp = 2 holds 2 and 1.
TEST(MlaParallel, LayerSplitDividesTheLatentCacheOverTheRanks) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const ModelConfig c = testing::deepseek2_shape_a();
  MlaModel m = mla_model(c);
  ASSERT_TRUE(m.model);
  const BatchOptions o{.max_sequences = 2, .max_tokens = 32, .max_batch_tokens = 32};
  auto per_rank = [&](const Config& knobs) {
    auto made = m.model->new_batch(**pool, o, knobs);
    EXPECT_TRUE(made.has_value()) << made.error().message();
    return made ? dynamic_cast<Forward&>(**made).kv_bytes_per_rank() : std::vector<int64_t>{};
  };
  const std::vector<int64_t> one = per_rank(Config());
  ASSERT_EQ(one.size(), 1u);
  const int64_t layer = one[0] / c.n_layers;
  EXPECT_EQ(per_rank(mla_knobs({{"engine.tp", "2"}})), (std::vector<int64_t>{one[0], one[0]}));
  EXPECT_EQ(per_rank(mla_knobs({{"engine.tp", "2"}, {"engine.layer_split", "on"}})),
            (std::vector<int64_t>{2 * layer, layer}));
  EXPECT_EQ(per_rank(mla_knobs({{"engine.tp", "4"}, {"engine.layer_split", "on"}})),
            (std::vector<int64_t>{layer, layer, layer, 0}));
}

// ReplaySSM (engine.kda.replay) acts on kimi-linear's KDA layers as on the hybrid's: other
// arithmetic (a checkpoint plus a window of steps), the same result within the hybrid's 1e-5.
TEST(MlaParallel, ReplaySsmActsOnKimiLinear) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  MlaModel m = mla_model(testing::kimi_linear_config());
  ASSERT_TRUE(m.model);
  const MlaRun plain = run_scenario(*m.model, **pool, Config());
  for (const char* window : {"4", "16"}) {
    const MlaRun replay =
        run_scenario(*m.model, **pool, mla_knobs({{"engine.kda.replay", "on"}, {"engine.kda.replay_window", window}}));
    expect_same_run(plain, replay, 1e-5, fmt::format("replay window {}", window));
    EXPECT_NE(plain.rows, replay.rows) << "engine.kda.replay=on did not change the arithmetic (window " << window << ")";
  }
}

// engine.kv_dtype.layer[N] sets each MLA layer's latent cache on its own: the pool's bytes are
// the sum of the layers' (rank + rope values in each dtype, + 4 for int8's per-token scale), each
// layer's dtype alone changes the logits, and all stay within 0.05 of f32 (the uniform bound of
// Deepseek2.LatentCacheBytesAndDtypes). kimi-linear reads the knob only for its MLA layer.
TEST(MlaCache, PerLayerKvDtypesAct) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const ModelConfig c = testing::deepseek2_shape_a();
  MlaModel m = mla_model(c);
  ASSERT_TRUE(m.model);
  const BatchOptions o{.max_sequences = 1, .max_tokens = 32, .max_batch_tokens = 32};
  const std::vector<TokenId> prompt = {10, 17, 24, 31, 38, 45};
  auto run = [&](const Config& knobs, KvUsage* usage) {
    auto made = m.model->new_batch(**pool, o, knobs);
    EXPECT_TRUE(made.has_value()) << made.error().message();
    if (!made) return std::vector<float>{};
    if (usage != nullptr) *usage = (*made)->kv_usage();
    const SeqId seq = *(*made)->add_sequence();
    std::vector<BatchToken> toks;
    for (size_t i = 0; i < prompt.size(); ++i)
      toks.push_back({.seq = seq, .token = prompt[i], .want_logits = i + 1 == prompt.size()});
    auto logits = (*made)->forward(toks);
    EXPECT_TRUE(logits.has_value()) << logits.error().message();
    return logits ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>{};
  };
  const std::vector<float> f32 = run(Config(), nullptr);
  const char* dtypes[] = {"bf16", "int8", "fp8_e4m3"};
  const int64_t value_bytes[] = {2, 1, 1};
  const int64_t width = c.kv_lora_rank + c.qk_rope_dim;
  Config mixed;
  int64_t per_token = 0;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string knob = fmt::format("engine.kv_dtype.layer[{}]", l);
    ASSERT_TRUE(mixed.set(knob, dtypes[l]).has_value());
    per_token += width * value_bytes[l] + (std::string(dtypes[l]) == "int8" ? 4 : 0);  // int8: a scale per token
    const std::vector<float> alone = run(mla_knobs({{knob.c_str(), dtypes[l]}}), nullptr);
    EXPECT_NE(alone, f32) << knob << "=" << dtypes[l] << " did not act";
  }
  KvUsage u;
  const std::vector<float> got = run(mixed, &u);
  EXPECT_EQ(u.bytes_total, per_token * u.pages_total * 16);
  double err = 0;
  for (size_t v = 0; v < f32.size(); ++v) err = std::max(err, std::fabs(double(f32[v]) - got[v]));
  EXPECT_GT(err, 0.0);
  EXPECT_LT(err, 0.05);

  const ModelConfig k = testing::kimi_linear_config();  // "kkak": layer 2 is MLA
  Config knobs;
  auto reads = knobs.track_reads();
  auto options = engine_options_from(knobs, k);
  ASSERT_TRUE(options.has_value()) << options.error().message();
  ASSERT_EQ(options->kv_dtypes.size(), 1u);
  for (int l = 0; l < k.n_layers; ++l) {
    const std::string name = fmt::format("engine.kv_dtype.layer[{}]", l);
    const std::vector<std::string> names = reads->names();
    EXPECT_EQ(std::find(names.begin(), names.end(), name) != names.end(), !k.is_kda_layer(l)) << name;
  }
}

}  // namespace
}  // namespace recur
