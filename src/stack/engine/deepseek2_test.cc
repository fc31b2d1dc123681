// deepseek2 (deepseek2.h) against its float64 reference (reference/mla_reference.h) on random
// models in llama.cpp's layout: two shapes (direct q, softmax gating, no YaRN; low-rank q,
// sigmoid gating with exp_probs_b and renormalization, YaRN, two shared experts) in F32, F16
// and Q8_0; prefill equals token-by-token decode; the absorbed and expanded MLA forms agree;
// the older unsplit attn_kv_b loads; the latent cache's dtypes; what is refused. kimi-linear
// (kimi_linear.h: KDA + MLA without RoPE + the same MoE) against the same reference.
#include "engine/deepseek2.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
#include "engine/architectures.h"
#include "engine/forward.h"
#include "engine/mla_test_models.h"
#include "engine/reference_test_util.h"
#include "engine/synthetic.h"

namespace recur {
namespace {

// The shapes (mla_test_models.h): A is DeepSeek-V2-Lite's form (q direct, softmax, no
// renormalization), B DeepSeek-V3's (low-rank q, sigmoid + selection bias, renormalized, scaled,
// YaRN, two shared experts), and Kimi-Linear's (KDA "kkak" + MLA without RoPE, sigmoid gating).
constexpr auto shape_a = testing::deepseek2_shape_a;
constexpr auto shape_b = testing::deepseek2_shape_b;
constexpr auto kimi_linear = testing::kimi_linear_config;

struct Built {
  std::vector<std::byte> bytes;
  std::unique_ptr<Model> model;
};

Built make(ModelConfig c, gguf::TensorType dtype, bool unsplit = false) {
  Built b;
  c.mla_unsplit_kv_b = unsplit;
  auto w = synthetic_model({.config = c, .dtype = dtype, .seed = 5});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  b.bytes = w->serialize();
  auto f = gguf::parse(b.bytes, "deepseek2.gguf");
  EXPECT_TRUE(f.has_value()) << (f ? "" : f.error().message());
  // Not regrouped: regrouped Q8_0 always meets Q8_0 activations, and exact_knobs() wants fp32.
  auto m = model_from_file(std::move(*f), {.regroup_q8_0 = false, .regroup_f16 = false});
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  if (m) b.model = std::move(*m);
  return b;
}

using testing::exact_knobs;
using testing::expect_prefill_equals_steps;
using testing::session;

// docs/engine.md, "MLA": |engine - reference| <= 2e-4 * max(1, max |logit|) per step, and the
// greedy continuation is the same tokens (reference_test_util.h).
void expect_matches_reference(const ModelConfig& c, gguf::TensorType dtype, const char* what) {
  Built b = make(c, dtype);
  ASSERT_TRUE(b.model) << what;
  testing::expect_engine_matches_reference(*b.model, what);
}

TEST(Deepseek2, ShapeAMatchesTheFloat64Reference) {
  expect_matches_reference(shape_a(), gguf::TensorType::kF32, "A f32");
  expect_matches_reference(shape_a(), gguf::TensorType::kF16, "A f16");
  expect_matches_reference(shape_a(), gguf::TensorType::kQ8_0, "A q8_0");
}

TEST(Deepseek2, ShapeBMatchesTheFloat64Reference) {
  expect_matches_reference(shape_b(), gguf::TensorType::kF32, "B f32");
  expect_matches_reference(shape_b(), gguf::TensorType::kF16, "B f16");
  expect_matches_reference(shape_b(), gguf::TensorType::kQ8_0, "B q8_0");
}

TEST(Deepseek2, UnsplitKvBMatchesTheFloat64Reference) {
  Built b = make(shape_a(), gguf::TensorType::kF32, /*unsplit=*/true);
  ASSERT_TRUE(b.model);
  ASSERT_NE(static_cast<const TransformerModel&>(*b.model).file().tensor("blk.0.attn_kv_b.weight"), nullptr);
  expect_matches_reference(shape_a(), gguf::TensorType::kF32, "A f32 split");  // the split form, same seed
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  Config ref_knobs;
  ASSERT_TRUE(ref_knobs.set("engine.numerics", "f64_reference").has_value());
  auto fast = session(*b.model, **pool, Config());
  auto ref = session(*b.model, **pool, ref_knobs);
  for (int t : {5, 300, 42}) {
    auto got = fast->step(t);
    auto want = ref->step(t);
    ASSERT_TRUE(got.has_value() && want.has_value());
    for (size_t v = 0; v < got->size(); ++v) ASSERT_NEAR((*got)[v], (*want)[v], 2e-4 * 4) << v;
  }
}

// The older form is the one llama.cpp c392e50 reads (llama-model.cpp's LLM_ARCH_DEEPSEEK2):
// key_length / value_length per head (it sizes its K/V cache and attn_q by them), head_count_kv =
// heads, no *_mla keys, and yarn_log_multiplier present even without YaRN (a required key there:
// "key not found in model" otherwise). Reading it back gives the same shape.
TEST(Deepseek2, UnsplitKvBFileHasTheKeysLlamaCppC392e50Reads) {
  for (const ModelConfig& shape : {shape_a(), shape_b()}) {
    Built b = make(shape, gguf::TensorType::kF32, /*unsplit=*/true);
    ASSERT_TRUE(b.model);
    const gguf::File& f = static_cast<const TransformerModel&>(*b.model).file();
    auto u32 = [&](const char* key) { const gguf::Value* v = f.find(key); return v ? v->as_int().value_or(-1) : -1; };
    EXPECT_EQ(u32("deepseek2.attention.key_length"), shape.qk_nope_dim + shape.qk_rope_dim);
    EXPECT_EQ(u32("deepseek2.attention.value_length"), shape.v_head_dim);
    EXPECT_EQ(u32("deepseek2.attention.head_count_kv"), shape.n_heads);
    EXPECT_EQ(f.find("deepseek2.attention.key_length_mla"), nullptr);
    EXPECT_EQ(f.find("deepseek2.attention.value_length_mla"), nullptr);
    const gguf::Value* log_mul = f.find("deepseek2.rope.scaling.yarn_log_multiplier");
    ASSERT_NE(log_mul, nullptr);
    EXPECT_FLOAT_EQ(float(log_mul->as_float().value_or(-1)), shape.rope_yarn_log_mul);
    const ModelConfig& got = b.model->config();
    EXPECT_TRUE(got.mla_unsplit_kv_b);
    EXPECT_EQ(got.head_dim, shape.head_dim);
    EXPECT_EQ(got.qk_nope_dim, shape.qk_nope_dim);
    EXPECT_EQ(got.v_head_dim, shape.v_head_dim);
    EXPECT_EQ(got.rope_yarn_factor, shape.rope_yarn_factor);
  }
  Built split = make(shape_a(), gguf::TensorType::kF32);  // the latent form keeps its keys
  ASSERT_TRUE(split.model);
  const gguf::File& f = static_cast<const TransformerModel&>(*split.model).file();
  EXPECT_NE(f.find("deepseek2.attention.key_length_mla"), nullptr);
  EXPECT_FALSE(split.model->config().mla_unsplit_kv_b);
}

// A prefill of several tokens (mla_prefill, causal within the run) ends where token-by-token
// decode (mla_decode) ends (reference_test_util.h).
TEST(Deepseek2, PrefillEqualsTokenByTokenDecode) {
  for (const ModelConfig& c : {shape_a(), shape_b()}) {
    Built b = make(c, gguf::TensorType::kF32);
    ASSERT_TRUE(b.model);
    auto pool = ThreadPool::create({.threads = 2, .pin = false});
    expect_prefill_equals_steps(*b.model, **pool, Config(), "deepseek2");
  }
}

// kernel.mla_decode.variant / kernel.mla_prefill.variant act on the engine: the expanded form
// runs different arithmetic (bits differ) to the same result.
TEST(Deepseek2, AbsorbedAndExpandedFormsAgreeInTheEngine) {
  Built b = make(shape_b(), gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  Config expand;
  ASSERT_TRUE(expand.set("kernel.mla_decode.variant", "expand").has_value());
  ASSERT_TRUE(expand.set("kernel.mla_prefill.variant", "expand").has_value());
  auto absorbed = session(*b.model, **pool, Config());
  auto expanded = session(*b.model, **pool, expand);
  const std::vector<TokenId> prompt = {4, 8, 15, 16, 23, 42};
  auto a = absorbed->prefill(prompt);
  std::vector<float> pa(a->begin(), a->end());
  auto e = expanded->prefill(prompt);
  ASSERT_TRUE(a.has_value() && e.has_value());
  bool differ = false;
  for (size_t v = 0; v < pa.size(); ++v) {
    ASSERT_NEAR(pa[v], (*e)[v], 1e-4) << v;
    differ |= pa[v] != (*e)[v];
  }
  EXPECT_TRUE(differ) << "the expand knob did not change the arithmetic";
  for (int t : {99, 100}) {
    auto x = absorbed->step(t);
    std::vector<float> xa(x->begin(), x->end());
    auto y = expanded->step(t);
    ASSERT_TRUE(y.has_value());
    for (size_t v = 0; v < xa.size(); ++v) ASSERT_NEAR(xa[v], (*y)[v], 1e-4) << v;
  }
  Config bad;
  ASSERT_TRUE(bad.set("kernel.mla_decode.variant", "nonesuch").has_value() == false ||
              !b.model->new_session(**pool, 8, bad).has_value());
}

// The cache holds kv_lora_rank + rope values per token and layer, in the knob's dtype; a
// quantized latent cache stays close to the f32 one.
TEST(Deepseek2, LatentCacheBytesAndDtypes) {
  const ModelConfig c = shape_a();
  Built b = make(c, gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  const BatchOptions one{.max_sequences = 1, .max_tokens = 32, .max_batch_tokens = 32};
  std::vector<float> base;
  for (const char* dtype : {"f32", "bf16", "fp8_e4m3", "int8"}) {
    Config knobs;
    for (int l = 0; l < c.n_layers; ++l)
      ASSERT_TRUE(knobs.set(fmt::format("engine.kv_dtype.layer[{}]", l), dtype).has_value());
    auto batch = b.model->new_batch(**pool, one, knobs);
    ASSERT_TRUE(batch.has_value()) << batch.error().message();
    const KvUsage u = (*batch)->kv_usage();
    const int64_t elt = std::string(dtype) == "f32" ? 4 : std::string(dtype) == "bf16" ? 2 : 1;
    const int64_t per_token = c.n_layers * ((c.kv_lora_rank + c.qk_rope_dim) * elt + (std::string(dtype) == "int8" ? 4 : 0));
    EXPECT_EQ(u.bytes_total, per_token * u.pages_total * 16) << dtype;
    auto seq = (*batch)->add_sequence();
    ASSERT_TRUE(seq.has_value());
    std::vector<BatchToken> toks;
    for (int i = 0; i < 6; ++i) toks.push_back({.seq = *seq, .token = 10 + 7 * i, .want_logits = i == 5});
    auto logits = (*batch)->forward(toks);
    ASSERT_TRUE(logits.has_value()) << logits.error().message();
    if (base.empty()) base.assign(logits->begin(), logits->end());
    double err = 0;
    for (size_t v = 0; v < base.size(); ++v) err = std::max(err, std::fabs(double(base[v]) - (*logits)[v]));
    EXPECT_LT(err, std::string(dtype) == "f32" ? 0.0 + 1e-30 : 0.05) << dtype;
  }
}

TEST(KimiLinear, MatchesTheFloat64Reference) {
  expect_matches_reference(kimi_linear(), gguf::TensorType::kF32, "kimi f32");
  expect_matches_reference(kimi_linear(), gguf::TensorType::kF16, "kimi f16");
  expect_matches_reference(kimi_linear(), gguf::TensorType::kQ8_0, "kimi q8_0");
}

TEST(KimiLinear, WritesAndReadsLlamaCppsLayout) {
  Built b = make(kimi_linear(), gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  const gguf::File& f = static_cast<const TransformerModel&>(*b.model).file();
  for (const char* name : {"blk.0.ssm_conv1d_q.weight", "blk.0.ssm_f_a.weight", "blk.0.ssm_f_b.weight", "blk.0.ssm_beta.weight",
                           "blk.0.ssm_a", "blk.0.ssm_dt.bias", "blk.0.ssm_g_a.weight", "blk.0.ssm_g_b.weight",
                           "blk.0.ssm_norm.weight", "blk.2.attn_kv_a_mqa.weight", "blk.2.attn_k_b.weight",
                           "blk.1.exp_probs_b.bias"})
    EXPECT_NE(f.tensor(name), nullptr) << name;
  EXPECT_EQ(f.tensor("blk.0.ssm_conv1d_q.weight")->dims, (std::vector<uint64_t>{4, 1, 128}));
  const gguf::Value* kv = f.find("kimi-linear.attention.head_count_kv");
  ASSERT_NE(kv, nullptr);
  ASSERT_EQ(kv->items.size(), 4u);
  EXPECT_EQ(kv->items[0].as_int(), 0);
  EXPECT_EQ(kv->items[2].as_int(), 1);
  EXPECT_EQ(b.model->config().layer_pattern, "kkak");
  EXPECT_FALSE(b.model->config().mla_rope);
}

TEST(KimiLinear, PrefillEqualsTokenByTokenDecodeForEveryKdaVariant) {
  Built b = make(kimi_linear(), gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (const char* variant : {"vtile", "hoisted_recip"}) {
    Config knobs;
    ASSERT_TRUE(knobs.set("engine.kda.decode_variant", variant).has_value());
    expect_prefill_equals_steps(*b.model, **pool, knobs, variant);
  }
}

// Two sequences in one forward (their runs side by side in one MLA call, pages interleaved)
// give what each gives alone, for a prefill and then a batched decode step.
TEST(Deepseek2, SequencesInOneBatchMatchSessionsAlone) {
  for (const ModelConfig& c : {shape_b(), kimi_linear()}) {
    Built b = make(c, gguf::TensorType::kF32);
    ASSERT_TRUE(b.model);
    testing::expect_batched_sequences_match_alone(*b.model);
  }
}

// engine.tp=2 splits MLA's heads (each rank keeps the whole latent cache), KDA's heads and the
// FFNs; the logits match one rank's, for deepseek2 (with its leading dense layer and shared
// expert of their own widths) and kimi-linear (with its low-rank KDA gates).
TEST(Deepseek2, TensorParallelMatchesOneRank) {
  for (const ModelConfig& c : {shape_a(), kimi_linear()}) {
    Built b = make(c, gguf::TensorType::kF32);
    ASSERT_TRUE(b.model);
    auto pool = ThreadPool::create({.threads = 2, .pin = false});
    Config tp;
    ASSERT_TRUE(tp.set("engine.tp", "2").has_value());
    auto one = session(*b.model, **pool, Config());
    auto two = session(*b.model, **pool, tp);
    ASSERT_TRUE(one && two) << arch_name(c.arch);
    const std::vector<TokenId> prompt = {3, 141, 59, 265};
    auto x = one->prefill(prompt);
    std::vector<float> a(x->begin(), x->end());
    auto y = two->prefill(prompt);
    ASSERT_TRUE(y.has_value()) << y.error().message();
    for (size_t v = 0; v < a.size(); ++v) ASSERT_NEAR(a[v], (*y)[v], 1e-4) << arch_name(c.arch) << " prefill " << v;
    for (TokenId t : {35, 89}) {
      auto p = one->step(t);
      std::vector<float> pa(p->begin(), p->end());
      auto q = two->step(t);
      ASSERT_TRUE(q.has_value());
      for (size_t v = 0; v < pa.size(); ++v) ASSERT_NEAR(pa[v], (*q)[v], 1e-4) << arch_name(c.arch) << " decode " << v;
    }
  }
}

TEST(Deepseek2, RefusesWhatItDoesNotRun) {
  Built b = make(shape_a(), gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  Config ep;  // expert parallelism runs (mla_parallel_test), with whole experts on each rank
  ASSERT_TRUE(ep.set("engine.ep", "4").has_value());
  auto s = b.model->new_session(**pool, 8, ep);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("engine.ep=4 does not divide the 6 experts"), std::string::npos)
      << s.error().message();
  Config tp;  // shape B has 3 heads
  ASSERT_TRUE(tp.set("engine.tp", "2").has_value());
  Built three = make(shape_b(), gguf::TensorType::kF32);
  auto t = three.model->new_session(**pool, 8, tp);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("does not divide the 3 attention heads"), std::string::npos) << t.error().message();
  // A file without one of its MLA tensors names it.
  auto w = synthetic_model({.config = shape_a(), .dtype = gguf::TensorType::kF32, .seed = 5});
  ASSERT_TRUE(w.has_value());
  std::vector<std::byte> bytes = w->serialize();
  // Rename the tensor in the header (same length, so the file stays well formed).
  const std::string name = "blk.1.attn_kv_a_norm.weight";
  auto* raw = reinterpret_cast<char*>(bytes.data());
  const auto at = std::search(raw, raw + bytes.size(), name.begin(), name.end());
  ASSERT_NE(at, raw + bytes.size());
  at[name.size() - 1] = 'X';
  auto f = gguf::parse(bytes, "broken.gguf");
  ASSERT_TRUE(f.has_value());
  auto m = model_from_file(std::move(*f));
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message().find("blk.1.attn_kv_a_norm.weight"), std::string::npos) << m.error().message();
}

// deepseek2 and kimi-linear are rows of the architecture table (MLA; kimi-linear's layers follow
// the pattern), and their MoE keys map onto the fields every row shares: expert_shared_count
// shared experts are one shared expert shared_ffn_dim = count x ffn_dim wide, expert_weights_norm
// is moe_renormalize; both round-trip through the file.
TEST(Deepseek2, IsARowOfTheArchitectureTableWithTheSharedMoeFields) {
  for (const char* name : {"deepseek2", "kimi-linear"}) {
    auto row = find_architecture(name, "test");
    ASSERT_TRUE(row.has_value()) << name;
    EXPECT_TRUE((*row)->mla) << name;
    EXPECT_EQ((*row)->kda_layers, std::string_view(name) == "kimi-linear") << name;
    EXPECT_EQ(arch_name((*row)->arch), name);
    EXPECT_NE(supported_architectures().find(name), std::string::npos) << supported_architectures();
  }
  for (const ModelConfig& c : {shape_a(), shape_b()}) {
    Built b = make(c, gguf::TensorType::kF32);
    ASSERT_TRUE(b.model);
    const ModelConfig& read = b.model->config();
    const gguf::File& f = static_cast<const TransformerModel&>(*b.model).file();
    const gguf::Value* count = f.find("deepseek2.expert_shared_count");
    ASSERT_NE(count, nullptr);
    EXPECT_EQ(count->as_int().value_or(-1), c.shared_width() / c.ffn_dim);
    EXPECT_EQ(read.shared_width(), c.shared_width());
    EXPECT_EQ(read.moe_renormalize, c.moe_renormalize);
    EXPECT_EQ(read.expert_gating, c.expert_gating);
    EXPECT_EQ(read.expert_weights_scale, c.expert_weights_scale);
    EXPECT_EQ(read.max_ffn_width(), std::max({c.ffn_dim, c.dense_ffn_dim, c.shared_width()}));
  }
  ModelConfig part = shape_a();
  part.shared_ffn_dim = part.ffn_dim + 16;  // not whole experts: no expert_shared_count says it
  auto s = part.validate();
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("not whole experts"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace recur
