// Tensor parallelism: TP=P must give TP=1's greedy tokens, with logits equal up to summation
// order, for every P the knob allows, including more ranks than KV heads and than cores.
#include "engine/tensor_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/convert.h"
#include "core/thread_pool.h"
#include "engine/hybrid.h"
#include "engine/forward.h"
#include "engine/reference/llama_session.h"
#include "engine/layers.h"
#include "engine/moe_ep.h"
#include "engine/sampler.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "kernels/gemm/gemm_test_util.h"
#include "kernels/layer/layer.h"

namespace recur {
namespace {

ModelConfig tp_config() {
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.dim = 256;
  c.n_layers = 2;
  c.n_heads = 8;
  c.n_kv_heads = 2;  // TP=4 and 8 put several ranks on one KV head
  c.head_dim = 32;
  c.ffn_dim = 256;
  c.vocab = 400;
  c.context = 64;
  return c;
}

TEST(TensorParallel, RankSpansCoverEverythingOnce) {
  for (int p : {1, 2, 3, 4, 8}) {
    int64_t next = 0;
    for (int r = 0; r < p; ++r) {
      Span s = rank_span(256, p, r, 32);
      EXPECT_EQ(s.begin, next);
      EXPECT_EQ(s.begin % 32, 0);
      next = s.end;
    }
    EXPECT_EQ(next, 256);
  }
}

TEST(TensorParallel, AllReduceSumsInRankOrderOnEveryRank) {
  constexpr int P = 4;
  RankGroup group(P, 3);
  auto pool = ThreadPool::create({.threads = P, .pin = false});
  std::vector<std::vector<float>> out(P, std::vector<float>(3));
  (*pool)->run_on_all([&](int r) {
    float partial[3] = {float(r), 1e8f * (r == 0) - 1e8f * (r == 1), 0.1f * float(r + 1)};
    group.all_reduce_sum(r, partial, out[size_t(r)].data(), 3);
  });
  for (int r = 0; r < P; ++r) {
    EXPECT_EQ(out[size_t(r)][0], 6.0f);
    // ((1e8 - 1e8) + 0) + 0 in rank order: exactly 0 on every rank.
    EXPECT_EQ(out[size_t(r)][1], 0.0f);
    EXPECT_EQ(out[size_t(r)][2], out[0][2]) << "ranks must hold bit-identical sums";
  }
}

// bf16 collectives: each partial and the rank-order sum rounded to bf16, on every rank alike.
TEST(TensorParallel, Bf16AllReduceRoundsPartialsAndSum) {
  constexpr int P = 2;
  RankGroup group(P, 2, ReduceDtype::kBf16);
  auto pool = ThreadPool::create({.threads = P, .pin = false});
  std::vector<std::vector<float>> out(P, std::vector<float>(2));
  const float a[2] = {1.00390625f + 1e-4f, 3.3f}, b[2] = {1e-3f, -1.1f};
  (*pool)->run_on_all([&](int r) { group.all_reduce_sum(r, r == 0 ? a : b, out[size_t(r)].data(), 2); });
  auto bf = [](float x) { return bf16_to_fp32(fp32_to_bf16(x)); };
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(out[0][size_t(i)], bf(bf(a[i]) + bf(b[i]))) << i;
    EXPECT_EQ(out[1][size_t(i)], out[0][size_t(i)]);
  }
}

TEST(TensorParallel, ColumnShardsCopyWholeBlocks) {
  std::vector<float> data(4 * 64);
  for (size_t i = 0; i < data.size(); ++i) data[i] = float(i);
  Weight w{"w", gguf::TensorType::kF32, 4, 64, reinterpret_cast<const std::byte*>(data.data())};
  auto shard = weight_cols(w, 16, 48);
  ASSERT_TRUE(shard.has_value());
  float row[32];
  (*shard)->view.dequantize_row(2, row);
  EXPECT_EQ(row[0], float(2 * 64 + 16));
  EXPECT_EQ(row[31], float(2 * 64 + 47));
  Weight q8{"q", gguf::TensorType::kQ8_0, 1, 64, nullptr};
  EXPECT_FALSE(weight_cols(q8, 16, 48).has_value()) << "Q8_0 shards must be whole 32-value blocks";
}

// Row and column shards of a regrouped Q8_0 weight hold the rows of the row-layout weight:
// aligned row slices and column shards stay regrouped, a slice through a group is copied back
// to rows.
TEST(TensorParallel, RegroupedShardsHoldTheSameRows) {
  const int64_t rows = 48, cols = 96;
  for (auto [type, format] : {std::pair{gguf::TensorType::kQ8_0, gemm::WeightFormat::kQ8_0},
                              std::pair{gguf::TensorType::kF16, gemm::WeightFormat::kF16}}) {
    SCOPED_TRACE(gguf::tensor_type_name_static(type));
    const auto bytes = gemm::testing::encode(format, gemm::testing::random_values(size_t(rows * cols), 5), rows, cols);
    const Weight plain{"w", type, rows, cols, bytes.data()};
    std::vector<std::byte> grouped(bytes.size());
    auto r16 = regroup_weight(plain, grouped.data());
    ASSERT_TRUE(r16.has_value()) << r16.error().message();
    EXPECT_FALSE(regroup_weight(*r16, grouped.data()).has_value()) << "already regrouped";
    EXPECT_FALSE(regroup_weight(weight_rows(plain, 0, 8), grouped.data()).has_value()) << "8 rows";
    auto same_rows = [&](const Weight& v, int64_t r0, int64_t c0) {
      std::vector<float> got(static_cast<size_t>(v.cols)), want(static_cast<size_t>(cols));
      for (int64_t r = 0; r < v.rows; ++r) {
        v.dequantize_row(r, got.data());
        plain.dequantize_row(r0 + r, want.data());
        for (int64_t c = 0; c < v.cols; ++c) ASSERT_EQ(got[size_t(c)], want[size_t(c0 + c)]) << r << "," << c;
      }
    };
    same_rows(*r16, 0, 0);
    const Weight aligned = weight_rows(*r16, 16, 48), cut = weight_rows(*r16, 8, 40);
    EXPECT_TRUE(aligned.regrouped);
    EXPECT_FALSE(cut.regrouped);
    same_rows(aligned, 16, 0);
    same_rows(cut, 8, 0);
    auto cols_shard = weight_cols(*r16, 32, 96);
    ASSERT_TRUE(cols_shard.has_value());
    EXPECT_TRUE((*cols_shard)->view.regrouped);
    same_rows((*cols_shard)->view, 0, 32);
  }
}

// `tag` keeps files of tests that ctest may run at once apart.
std::string write_tp_model_file(const std::vector<std::byte>& bytes, gguf::TensorType dtype,
                                const std::string& tag = "llama") {
  const std::string path = ::testing::TempDir() + "tp_model_" + tag + std::to_string(int(dtype)) + ".gguf";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

// regroup: Q8_0 regrouped at load (engine.weight_layout=r16); its o/down live in the model's own
// memory then, not the file's, so nothing is released.
// F16 rounds every activation to fp16 (kernel.gemm.f16_activations): a difference in fp32
// summation order can move an element across a rounding boundary, a 2^-11 step that the later
// layers carry, so its logits get 1e-3 of the scale (measured 2.0-2.4e-4) instead of 1e-4.
void expect_tp_matches_tp1(gguf::TensorType dtype, bool regroup = false) {
  const double tolerance = dtype == gguf::TensorType::kF16 ? 1e-3 : 1e-4;
  auto w = synthetic_model({tp_config(), dtype, 11});
  ASSERT_TRUE(w.has_value());
  // From a file on disk, so TP>1 releases the mapped pages of wo/w_down after copying them and
  // later sessions (and tp=1's views) refault them from the file.
  const std::string path = write_tp_model_file(w->serialize(), dtype, regroup ? "regrouped" : "llama");
  auto file = gguf::read(path);
  ASSERT_TRUE(file.has_value()) << file.error().message();
  auto model = LlamaModel::from_file(std::move(*file), {.regroup_q8_0 = regroup, .regroup_f16 = regroup});
  ASSERT_TRUE(model.has_value()) << model.error().message();
  EXPECT_EQ((*model)->layers[0].w_down.regrouped, regroup);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto run = [&](int tp, std::vector<std::vector<float>>* logits_out) {
    auto s = LlamaSession::create(**model, **pool, 24, tp);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
    if (tp > 1 && !regroup) {
      EXPECT_GT((*s)->released_source_bytes(), 0u) << "tp=" << tp;
    }
    std::vector<TokenId> tokens;
    TokenId t = 5;
    for (int i = 0; i < 20; ++i) {
      auto logits = (*s)->step(t);
      EXPECT_TRUE(logits.has_value());
      logits_out->emplace_back(logits->begin(), logits->end());
      t = argmax(*logits);
      tokens.push_back(t);
    }
    return tokens;
  };
  std::vector<std::vector<float>> base;
  std::vector<TokenId> want = run(1, &base);
  for (int tp : {2, 4, 8}) {
    std::vector<std::vector<float>> got;
    EXPECT_EQ(run(tp, &got), want) << "tp=" << tp;
    double max_diff = 0, scale = 0;
    for (size_t i = 0; i < base.size(); ++i)
      for (size_t j = 0; j < base[i].size(); ++j) {
        max_diff = std::max(max_diff, double(std::fabs(base[i][j] - got[i][j])));
        scale = std::max(scale, double(std::fabs(base[i][j])));
      }
    EXPECT_LT(max_diff, tolerance * scale) << "tp=" << tp;
  }
  std::remove(path.c_str());
}

TEST(TensorParallel, LlamaF32GreedyTokensMatchTp1) { expect_tp_matches_tp1(gguf::TensorType::kF32); }
TEST(TensorParallel, LlamaQ8GreedyTokensMatchTp1) { expect_tp_matches_tp1(gguf::TensorType::kQ8_0); }
TEST(TensorParallel, LlamaQ8RegroupedGreedyTokensMatchTp1) { expect_tp_matches_tp1(gguf::TensorType::kQ8_0, true); }
TEST(TensorParallel, LlamaF16RegroupedGreedyTokensMatchTp1) { expect_tp_matches_tp1(gguf::TensorType::kF16, true); }
TEST(TensorParallel, LlamaF16GreedyTokensMatchTp1) { expect_tp_matches_tp1(gguf::TensorType::kF16); }

// The regrouped layout changes only the fp32 order of the block sums (the int8 block dots are
// exact either way): the same greedy tokens and logits within 1e-4 of their scale.
TEST(TensorParallel, LlamaQ8RegroupedMatchesTheRowLayout) {
  auto w = synthetic_model({tp_config(), gguf::TensorType::kQ8_0, 13});
  ASSERT_TRUE(w.has_value());
  const std::string path = write_tp_model_file(w->serialize(), gguf::TensorType::kQ8_0, "layouts");
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  std::vector<std::vector<float>> logits[2];
  std::vector<TokenId> tokens[2];
  for (int regroup = 0; regroup < 2; ++regroup) {
    auto file = gguf::read(path);
    ASSERT_TRUE(file.has_value()) << file.error().message();
    auto model = LlamaModel::from_file(std::move(*file), {.regroup_q8_0 = regroup == 1, .regroup_f16 = false});
    ASSERT_TRUE(model.has_value()) << model.error().message();
    EXPECT_EQ((*model)->layers[0].wq.regrouped, regroup == 1);
    auto s = LlamaSession::create(**model, **pool, 24);
    ASSERT_TRUE(s.has_value());
    TokenId t = 3;
    for (int i = 0; i < 16; ++i) {
      auto l = (*s)->step(t);
      ASSERT_TRUE(l.has_value());
      logits[regroup].emplace_back(l->begin(), l->end());
      t = argmax(*l);
      tokens[regroup].push_back(t);
    }
  }
  EXPECT_EQ(tokens[0], tokens[1]);
  double max_diff = 0, scale = 0;
  for (size_t i = 0; i < logits[0].size(); ++i)
    for (size_t j = 0; j < logits[0][i].size(); ++j) {
      max_diff = std::max(max_diff, double(std::fabs(logits[0][i][j] - logits[1][i][j])));
      scale = std::max(scale, double(std::fabs(logits[0][i][j])));
    }
  EXPECT_GT(max_diff, 0.0) << "the layouts sum in different orders";
  EXPECT_LT(max_diff, 1e-4 * scale);
  std::remove(path.c_str());
}

// Releasing pages is only safe on the read-only file map: anonymous memory would read back zeros.
TEST(TensorParallel, ReleaseRefusesMemoryOutsideTheFileMapping) {
  const std::string path = write_tp_model_file(std::vector<std::byte>(3 * 4096 + 100, std::byte{7}),
                                               gguf::TensorType::kI8);
  auto mapping = MappedFile::open(path);
  ASSERT_TRUE(mapping.has_value()) << mapping.error().message();
  std::vector<std::byte> anonymous(3 * 4096 + 100, std::byte{7});
  EXPECT_FALSE(mapping->contains(anonymous.data(), anonymous.size()));
  EXPECT_FALSE(mapping->release_pages(anonymous.data(), anonymous.size()).has_value());
  EXPECT_FALSE(mapping->release_pages(mapping->bytes().data() + 1, mapping->size()).has_value());  // runs past the end
  Weight outside;
  outside.type = gguf::TensorType::kF32;
  outside.rows = 1;
  outside.cols = int64_t(anonymous.size() / 4);
  outside.data = anonymous.data();
  const Weight* sources[] = {&outside};
  auto released = release_copied_sources(*mapping, sources);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(*released, 0u);
  EXPECT_EQ(anonymous[4096 + 5], std::byte{7});
  // Inside: the page-aligned interior goes, and reading it again refaults the file's bytes.
  auto inside = mapping->release_pages(mapping->bytes().data(), mapping->size());
  ASSERT_TRUE(inside.has_value()) << inside.error().message();
  EXPECT_GT(*inside, 0u);
  EXPECT_EQ(mapping->bytes()[4096 + 5], std::byte{7});
  std::remove(path.c_str());
}

// Hybrid (testing::tiny_hybrid_config): KDA value heads (2 per key head), attention heads, FFN
// columns or every expert's columns, and the vocabulary split across ranks; TP=4 puts two ranks
// on one KDA key head.
// Greedy tokens and every step's logits of `steps` steps from token 5 at knobs `tp`.
std::vector<std::vector<float>> hybrid_run(const Model& model, ThreadPool& pool, int tp, int steps,
                                           std::vector<TokenId>* tokens) {
  Config knobs;
  EXPECT_TRUE(knobs.set("engine.tp", std::to_string(tp)).has_value());
  auto s = model.new_session(pool, steps + 1, knobs);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  std::vector<std::vector<float>> out;
  TokenId t = 5;
  for (int i = 0; i < steps; ++i) {
    auto logits = (*s)->step(t);
    EXPECT_TRUE(logits.has_value());
    out.emplace_back(logits->begin(), logits->end());
    tokens->push_back(t = argmax(*logits));
  }
  return out;
}

// Sharding the hybrid at `tp` from its file releases the pages of the copied row-parallel
// sources (KDA/attention wo, dense or expert and shared down projections).
size_t hybrid_released_bytes(const Model& model, ThreadPool& pool, int tp) {
  const auto& hybrid = dynamic_cast<const HybridModel&>(model);
  Config knobs;
  EXPECT_TRUE(knobs.set("engine.tp", std::to_string(tp)).has_value());
  auto options = engine_options_from(knobs, hybrid.config());
  EXPECT_TRUE(options.has_value()) << (options ? "" : options.error().message());
  auto batch = Forward::create(hybrid, pool, BatchOptions{.max_tokens = 16, .max_batch_tokens = 16}, *options);
  EXPECT_TRUE(batch.has_value()) << (batch ? "" : batch.error().message());
  return batch ? (*batch)->released_source_bytes() : 0;
}

TEST(TensorParallel, HybridGreedyTokensAndLogitsMatchTp1) {
  for (int experts : {0, 4}) {
    auto w = synthetic_model({testing::tiny_hybrid_config(experts), gguf::TensorType::kF32, 7});
    ASSERT_TRUE(w.has_value()) << w.error().message();
    // From a file on disk, so TP>1 releases the copied sources' pages and every later session
    // (tp = 1's views included) reads them refaulted from the file.
    const std::string path =
        write_tp_model_file(w->serialize(), gguf::TensorType::kF32, "hybrid" + std::to_string(experts));
    auto file = gguf::read(path);
    ASSERT_TRUE(file.has_value()) << file.error().message();
    auto model = model_from_file(std::move(*file));
    ASSERT_TRUE(model.has_value()) << model.error().message();
    auto pool = ThreadPool::create({.threads = 2, .pin = false});
    std::vector<TokenId> want;
    auto base = hybrid_run(**model, **pool, 1, 16, &want);
    EXPECT_EQ(hybrid_released_bytes(**model, **pool, 1), 0u) << "tp=1 holds views, nothing to release";
    EXPECT_GT(hybrid_released_bytes(**model, **pool, 2), 0u) << "experts=" << experts;
    for (int tp : {2, 4}) {
      std::vector<TokenId> got;
      auto logits = hybrid_run(**model, **pool, tp, 16, &got);
      EXPECT_EQ(got, want) << "tp=" << tp << " experts=" << experts;
      double max_diff = 0, scale = 0;
      for (size_t i = 0; i < base.size(); ++i)
        for (size_t j = 0; j < base[i].size(); ++j) {
          max_diff = std::max(max_diff, double(std::fabs(base[i][j] - logits[i][j])));
          scale = std::max(scale, double(std::fabs(base[i][j])));
        }
      EXPECT_LT(max_diff, 1e-5 * scale) << "tp=" << tp << " experts=" << experts;
    }
    std::vector<TokenId> again;
    EXPECT_EQ(hybrid_run(**model, **pool, 1, 16, &again), base) << "tp=1 after the release, experts=" << experts;
    std::remove(path.c_str());
  }
}

TEST(TensorParallel, HybridRejectsSplitsThatDoNotDivide) {
  ModelConfig c = testing::tiny_hybrid_config(0);
  c.kda_heads = 6;
  c.kda_key_heads = 3;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 1});
  ASSERT_TRUE(w.has_value()) << w.error().message();
  std::vector<std::byte> bytes = w->serialize();
  auto model = model_from_file(std::move(*gguf::parse(bytes, "m")));
  ASSERT_TRUE(model.has_value()) << model.error().message();
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.tp", "4").has_value());
  auto s = (*model)->new_session(**pool, 8, knobs);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("does not divide the 6 KDA value heads"), std::string::npos)
      << s.error().message();
  ASSERT_TRUE(knobs.set("engine.tp", "2").has_value());
  s = (*model)->new_session(**pool, 8, knobs);
  ASSERT_FALSE(s.has_value()) << "3 key heads over 2 ranks: a rank's value heads would straddle key heads";
  EXPECT_NE(s.error().message().find("3 KDA key heads"), std::string::npos) << s.error().message();
}

TEST(TensorParallel, RejectsSplitsThatDoNotDivide) {
  ModelConfig c = tp_config();
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 32;
  c.dim = 192;
  auto w = synthetic_model({c, gguf::TensorType::kF32, 1});
  ASSERT_TRUE(w.has_value()) << w.error().message();
  std::vector<std::byte> bytes = w->serialize();
  auto model = LlamaModel::from_file(std::move(*gguf::parse(bytes, "m")));
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  auto s = LlamaSession::create(**model, **pool, 8, 4);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("does not divide the 6 attention heads"), std::string::npos);
  Config knobs;
  EXPECT_FALSE(knobs.set("engine.tp", "3").has_value());
  ASSERT_TRUE(knobs.set("engine.tp", "2").has_value());
  EXPECT_TRUE((*model)->new_session(**pool, 8, knobs).has_value());
}


// Expert parallelism (moe_ep.h) on the threads backend: 4 ranks owning contiguous runs of 7
// rows (one rank owns none), 8 experts, top-3, in both dispatch modes, against one rank holding
// every expert: the same bits, since every expert sees the same rows in the same order and
// each token's outputs are added in ascending expert order.
TEST(ExpertParallel, DispatchCombineEqualsOneRankBitForBit) {
  constexpr int E = 8, K = 3, P = 4;
  constexpr int64_t dim = 5, M = 3;
  std::vector<float> h(size_t(M * P * dim)), router(size_t(M * P * E));
  for (size_t i = 0; i < h.size(); ++i) h[i] = std::sin(float(i) * 0.7f);
  for (size_t i = 0; i < router.size(); ++i) router[i] = std::cos(float(i) * 1.3f);
  const int64_t rows = 7;  // rows [0, 7): ranks own 2, 2, 2, 1
  // Expert e: y = tanh(x * (e + 1)) + rows seen so far, so the grouping order shows.
  auto expert = [](int e, const float* x, int64_t m, float* y) {
    for (int64_t j = 0; j < m; ++j)
      for (int64_t i = 0; i < dim; ++i) y[j * dim + i] = std::tanh(x[j * dim + i] * float(e + 1)) + 0.01f * float(j);
  };
  // Routed as blocks/moe_ffn.cc routes (the registered route_topk; the engine's gating, moe_gating.cc).
  std::vector<int32_t> ids(size_t(rows * K));
  std::vector<float> weights(size_t(rows * K));
  ASSERT_TRUE(kernels::route_topk(router.data(), rows, E, K, kernels::RouteScore::kSoftmax, true, ids.data(),
                                  weights.data())
                  .has_value());
  RankGroup one(1, 1);
  moe::EpWorkspace ws1;
  std::vector<float> want(size_t(rows * dim));
  moe::ep_moe_forward({.comm = &one, .rank = 0, .n_experts = E, .top_k = K, .dim = dim, .max_rows_per_rank = rows},
                      h.data(), ids.data(), weights.data(), rows, expert, ws1, want.data());
  // The plain loop over experts (blocks/moe_ffn.cc's EP=1 path) gives the same.
  std::vector<float> loop(size_t(rows * dim), 0.0f);
  for (int e = 0; e < E; ++e) {
    std::vector<int64_t> at;
    std::vector<float> w, x, y;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < K; ++j)
        if (ids[size_t(i * K + j)] == e) {
          at.push_back(i);
          w.push_back(weights[size_t(i * K + j)]);
          x.insert(x.end(), h.begin() + i * dim, h.begin() + (i + 1) * dim);
        }
    }
    y.resize(x.size());
    if (!at.empty()) expert(e, x.data(), int64_t(at.size()), y.data());
    for (size_t j = 0; j < at.size(); ++j)
      for (int64_t i = 0; i < dim; ++i) loop[size_t(at[j] * dim + i)] = loop[size_t(at[j] * dim + i)] + w[j] * y[j * dim + size_t(i)];
  }
  EXPECT_EQ(loop, want);
  for (moe::DispatchMode mode : {moe::DispatchMode::kNormal, moe::DispatchMode::kLowLatency}) {
    RankGroup group(P, 1);
    std::vector<float> got(size_t(rows * dim), -1.0f);
    std::vector<moe::EpWorkspace> ws(P);
    std::vector<std::thread> ranks;
    for (int r = 0; r < P; ++r)
      ranks.emplace_back([&, r] {
        const Span own = rank_span(rows, P, r);
        moe::ep_moe_forward({.comm = &group, .rank = r, .n_experts = E, .top_k = K, .dim = dim, .mode = mode,
                             .max_rows_per_rank = (rows + P - 1) / P},
                            h.data() + own.begin * dim, ids.data() + own.begin * K, weights.data() + own.begin * K,
                            own.size(), expert,
                            ws[size_t(r)], got.data() + own.begin * dim);
      });
    for (std::thread& t : ranks) t.join();
    EXPECT_EQ(got, want) << "mode " << int(mode);
  }
}

// Greedy tokens and logits of `steps` decode steps, then one forward of 8 prompt rows over two
// new sequences, at the knobs given.
std::vector<std::vector<float>> ep_run(const Model& model, ThreadPool& pool,
                                       std::vector<std::pair<const char*, const char*>> knob_values,
                                       std::vector<TokenId>* tokens) {
  Config knobs;
  for (auto [k, v] : knob_values) EXPECT_TRUE(knobs.set(k, v).has_value()) << k << "=" << v;
  auto s = model.new_session(pool, 13, knobs);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  std::vector<std::vector<float>> out;
  if (!s) return out;
  TokenId t = 5;
  for (int i = 0; i < 12; ++i) {
    auto logits = (*s)->step(t);
    EXPECT_TRUE(logits.has_value());
    out.emplace_back(logits->begin(), logits->end());
    tokens->push_back(t = argmax(*logits));
  }
  auto b = model.new_batch(pool, {.max_sequences = 2, .max_tokens = 8, .max_batch_tokens = 8}, knobs);
  EXPECT_TRUE(b.has_value()) << (b ? "" : b.error().message());
  if (!b) return out;
  const SeqId a = *(*b)->add_sequence(), c = *(*b)->add_sequence();
  std::vector<BatchToken> prompt;
  for (int i = 0; i < 8; ++i) prompt.push_back({.seq = i < 5 ? a : c, .token = 7 + 11 * i, .want_logits = i == 4 || i == 7});
  auto logits = (*b)->forward(prompt);
  EXPECT_TRUE(logits.has_value()) << (logits ? "" : logits.error().message());
  if (logits) out.emplace_back(logits->begin(), logits->end());
  return out;
}

double ep_max_rel_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) {
      diff = std::max(diff, double(std::fabs(a[i][j] - b[i][j])));
      scale = std::max(scale, double(std::fabs(a[i][j])));
    }
  return diff / scale;
}

// EP on the tiny MoE hybrid (4 experts, top-2, shared expert): EP=2 and EP=4 in both dispatch
// modes give EP=1's greedy tokens and bit-identical logits (decode rows and an 8-row prefill:
// the GEMMs give each row the m = 1 result up to 8 rows, docs/gemm.md); TP=2 with EP=2 matches
// TP=2 within TP's summation-order tolerance.
TEST(ExpertParallel, HybridEpGivesEp1TokensAndLogits) {
  auto w = synthetic_model({testing::tiny_hybrid_config(4), gguf::TensorType::kF32, 7});
  ASSERT_TRUE(w.has_value()) << w.error().message();
  std::vector<std::byte> bytes = w->serialize();
  auto model = model_from_file(std::move(*gguf::parse(bytes, "hybrid-ep.gguf")));
  ASSERT_TRUE(model.has_value()) << model.error().message();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  std::vector<TokenId> want;
  auto base = ep_run(**model, **pool, {}, &want);
  ASSERT_EQ(base.size(), 13u);
  for (const char* ep : {"2", "4"})
    for (const char* mode : {"normal", "low_latency"}) {
      std::vector<TokenId> got;
      auto logits = ep_run(**model, **pool, {{"engine.ep", ep}, {"engine.ep.dispatch_mode", mode}}, &got);
      EXPECT_EQ(got, want) << "ep=" << ep << " " << mode;
      EXPECT_EQ(logits, base) << "ep=" << ep << " " << mode << ": max relative difference "
                              << ep_max_rel_diff(base, logits);
    }
  std::vector<TokenId> tp_tokens, tp_ep_tokens;
  auto tp = ep_run(**model, **pool, {{"engine.tp", "2"}}, &tp_tokens);
  auto tp_ep = ep_run(**model, **pool, {{"engine.tp", "2"}, {"engine.ep", "2"}}, &tp_ep_tokens);
  EXPECT_EQ(tp_ep_tokens, want);
  EXPECT_LT(ep_max_rel_diff(tp, tp_ep), 1e-5);
}

TEST(ExpertParallel, RejectsSplitsThatDoNotFit) {
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  for (int experts : {0, 4}) {
    auto w = synthetic_model({testing::tiny_hybrid_config(experts), gguf::TensorType::kF32, 1});
    ASSERT_TRUE(w.has_value()) << w.error().message();
    std::vector<std::byte> bytes = w->serialize();
    auto model = model_from_file(std::move(*gguf::parse(bytes, "m")));
    ASSERT_TRUE(model.has_value()) << model.error().message();
    Config knobs;
    ASSERT_TRUE(knobs.set("engine.ep", experts ? "8" : "2").has_value());
    auto s = (*model)->new_session(**pool, 8, knobs);
    ASSERT_FALSE(s.has_value());
    EXPECT_NE(s.error().message().find(experts ? "does not divide the 4 experts" : "has no MoE experts"),
              std::string::npos)
        << s.error().message();
  }
  // engine.collectives=mpi outside mpirun is refused where the knob is read.
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.collectives", "mpi").has_value());
  auto backend = engine_options_from(knobs, tp_config());
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr) {
    ASSERT_FALSE(backend.has_value());
    EXPECT_NE(backend.error().message().find("not launched by mpirun"), std::string::npos);
  }
}

}  // namespace
}  // namespace recur
