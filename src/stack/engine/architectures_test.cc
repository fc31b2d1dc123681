// Every row of the architecture table (architectures.h) on tiny random-weight files in
// llama.cpp's layout, two shapes and two storage types each: the native forward against the
// float64 reference (reference/hybrid_reference.h) within the hybrid's tolerance, equal greedy
// tokens, a prefill equal to token-by-token decode, TP / EP equal to one rank, and for each
// feature a check that the reference without it disagrees (so agreement is not vacuous).
#include "engine/architectures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/convert.h"
#include "core/thread_pool.h"
#include "engine/blocks/block.h"
#include "engine/reference/hybrid_reference.h"
#include "engine/synthetic.h"
#include "engine/transformer.h"

namespace recur {
namespace {

// A row of the table plus the RoPE scaling a llama file may carry and a sliding window.
struct Variant {
  const char* label;
  const char* arch;
  bool llama3_rope = false;
  float rope_scale = 1.0f;
  int window = -1;  // gemma2, gemma3: attention.sliding_window (-1: the row's default)
};

// The windowed rows have windows of 4 and 5 tokens: the checks' 10-40 positions run past them.
const Variant kVariants[] = {
    {"llama", "llama"},       {"llama3_rope", "llama", true}, {"llama_linear_rope", "llama", false, 4.0f},
    {"qwen2", "qwen2"},       {"qwen3", "qwen3"},             {"qwen2moe", "qwen2moe"},
    {"qwen3moe", "qwen3moe"}, {"phi3", "phi3"},             {"gemma2", "gemma2"},
    {"gemma2_window", "gemma2", false, 1.0f, 4},
    {"gemma3", "gemma3", false, 1.0f, 5},
    {"gemma3_linear_rope", "gemma3", false, 8.0f, 5},
    {"gemma3_global", "gemma3", false, 1.0f, 0},
};
const Variant& kGemma2Window = kVariants[9];
const Variant& kGemma3 = kVariants[10];
const Variant& kGemma3LinearRope = kVariants[11];

// Shape 0: dim 64, 4 heads on 2 KV heads of 16, 2 layers, FFN 64 (experts 64 wide, a shared
// expert 96 wide). Shape 1: dim 64, 2 heads on 1 KV head of 32, 3 layers, FFN 96 (shared 64).
// Both Q8_0-able; MoE: 4 experts, top 2.
ModelConfig config_for(const Variant& v, int shape) {
  auto arch = find_architecture(v.arch, "test");
  ModelConfig c;
  c.arch = (*arch)->arch;
  (*arch)->features(c);
  c.dim = 64;
  c.n_layers = shape == 0 ? 2 : 3;
  c.n_heads = shape == 0 ? 4 : 2;
  c.n_kv_heads = shape == 0 ? 2 : 1;
  c.head_dim = c.dim / c.n_heads;
  c.ffn_dim = shape == 0 ? 64 : 96;
  c.vocab = 400;
  c.context = 64;
  c.rope_theta = 10000.0f;
  c.rope_freq_scale = 1.0f / v.rope_scale;
  if (v.window >= 0) c.sliding_window = v.window;
  // gemma3: five sliding layers, then a global one (and in shape 1 a sliding one after it).
  if (c.arch == Arch::kGemma3) c.n_layers = shape == 0 ? 6 : 7;
  if (c.arch == Arch::kQwen2Moe || c.arch == Arch::kQwen3Moe) {
    c.n_experts = 4;
    c.n_experts_used = 2;
    if (c.shared_expert) c.shared_ffn_dim = shape == 0 ? 96 : 64;
  }
  return c;
}

struct Built {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model;
  const gguf::File& file() const { return static_cast<const TransformerModel&>(*model).file(); }
};

Built build(const Variant& v, int shape, gguf::TensorType dtype, uint64_t seed = 7) {
  Built b;
  SyntheticModelOptions o{config_for(v, shape), dtype, seed};
  o.llama3_rope = v.llama3_rope;
  auto w = synthetic_model(o);
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  b.storage = w->serialize();
  auto f = gguf::parse(b.storage, std::string(v.label) + ".gguf");
  EXPECT_TRUE(f.has_value());
  // Q8_0 kept in row form: regrouped Q8_0 always meets Q8_0 activations (docs/engine.md), and
  // these checks want fp32 activations everywhere (the llama.cpp comparison covers the rest).
  auto m = model_from_file(std::move(*f), {.regroup_q8_0 = false, .regroup_f16 = true});
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  if (m) b.model = std::move(*m);
  return b;
}

// fp32 activations against every storage type: what is left is fp32 rounding.
Config f32_knobs() {
  Config k;
  EXPECT_TRUE(k.set("kernel.gemm.q8_0_activations", "f32").has_value());
  EXPECT_TRUE(k.set("kernel.gemm.f16_activations", "f32").has_value());
  return k;
}

// The hybrid's tolerance (docs/engine.md, "Float64 reference"): |native - f64| < 2e-4 max(1, |f64|max).
double worst_rel(std::span<const float> got, const std::vector<double>& want) {
  double err = 0, scale = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

template <class T>
int argmax(const T& x) {
  return int(std::max_element(x.begin(), x.end()) - x.begin());
}

const std::vector<int> kTokens = {1, 200, 33, 399, 7, 150, 64, 2, 311, 90};

class Architectures : public ::testing::TestWithParam<Variant> {};

TEST_P(Architectures, NativeMatchesTheFloat64ReferenceAndGreedyTokensAreEqual) {
  const Variant& v = GetParam();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (int shape : {0, 1}) {
    for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kF16, gguf::TensorType::kQ8_0}) {
      SCOPED_TRACE(fmt::format("{} shape {} {}", v.label, shape, gguf::tensor_type_name(uint32_t(dtype))));
      Built b = build(v, shape, dtype);
      ASSERT_TRUE(b.model);
      auto session = b.model->new_session(**pool, 32, f32_knobs());
      ASSERT_TRUE(session.has_value()) << session.error().message();
      HybridReference ref(b.file(), b.model->config());
      for (int token : kTokens) {
        auto logits = (*session)->step(token);
        ASSERT_TRUE(logits.has_value()) << logits.error().message();
        EXPECT_LT(worst_rel(*logits, ref.step(token)), 2e-4) << "token " << token;
      }
      // Greedy decoding, each side feeding back its own choice.
      auto greedy = b.model->new_session(**pool, 32, f32_knobs());
      ASSERT_TRUE(greedy.has_value());
      HybridReference greedy_ref(b.file(), b.model->config());
      int mine = 1, theirs = 1;
      for (int i = 0; i < 12; ++i) {
        auto logits = (*greedy)->step(mine);
        ASSERT_TRUE(logits.has_value());
        mine = argmax(*logits);
        theirs = argmax(greedy_ref.step(theirs));
        ASSERT_EQ(mine, theirs) << "greedy token " << i;
      }
    }
  }
}

TEST_P(Architectures, PrefillEqualsTokenByTokenDecode) {
  const Variant& v = GetParam();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (int shape : {0, 1}) {
    Built b = build(v, shape, gguf::TensorType::kF16);
    ASSERT_TRUE(b.model);
    auto batched = b.model->new_session(**pool, 32, f32_knobs());
    auto stepped = b.model->new_session(**pool, 32, f32_knobs());
    ASSERT_TRUE(batched.has_value() && stepped.has_value());
    auto got = (*batched)->prefill(kTokens);
    ASSERT_TRUE(got.has_value()) << got.error().message();
    std::vector<float> prefilled(got->begin(), got->end());
    std::span<const float> last;
    for (int token : kTokens) last = *(*stepped)->step(token);
    EXPECT_LT(worst_rel(last, std::vector<double>(prefilled.begin(), prefilled.end())), 1e-4) << v.label << " shape " << shape;
    // The next decode step continues from the same state either way.
    auto a = (*batched)->step(5);
    std::vector<float> after(a->begin(), a->end());
    EXPECT_LT(worst_rel(*(*stepped)->step(5), std::vector<double>(after.begin(), after.end())), 1e-4);
  }
}

TEST_P(Architectures, F64ReferenceSessionIsTheReference) {
  const Variant& v = GetParam();
  Built b = build(v, 0, gguf::TensorType::kQ8_0);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.numerics", "f64_reference").has_value());
  auto session = b.model->new_session(**pool, 8, knobs);
  ASSERT_TRUE(session.has_value()) << session.error().message();
  HybridReference ref(b.file(), b.model->config());
  for (int token : {3, 99, 250}) {
    auto got = (*session)->step(token);
    ASSERT_TRUE(got.has_value());
    std::vector<double> want = ref.step(token);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ((*got)[i], float(want[i])) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Architectures, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<Variant>& i) { return std::string(i.param.label); });

// How far the native logits are from a reference that lacks (or flips) one feature: far beyond
// the tolerance, so the agreement above depends on each feature being implemented.
double without_feature(const Variant& v, void (*off)(ModelConfig&), const Variant* file_without = nullptr) {
  Built b = build(v, 0, gguf::TensorType::kF32);
  Built plain = file_without ? build(*file_without, 0, gguf::TensorType::kF32) : Built{};
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  auto session = b.model->new_session(**pool, 64, Config());
  ModelConfig c = b.model->config();
  off(c);
  HybridReference ref(file_without ? plain.file() : b.file(), c);
  // 60 positions: Llama 3's divisors act on the low frequencies, whose angles grow slowly.
  double worst = 0;
  for (int i = 0; i < 60; ++i) {
    const int token = kTokens[size_t(i) % kTokens.size()];
    worst = std::max(worst, worst_rel(*(*session)->step(token), ref.step(token)));
  }
  return worst;
}

// A Q8_0 file's MoE router is F32, as llama-quantize and llama.cpp's converter leave
// ffn_gate_inp.weight in quantized files: llama.cpp multiplies a Q8_0 router with Q8_0
// activations, recur's router always takes fp32 ones, so only an F32 router is computed alike.
TEST(ArchitectureFeatures, Q8_0FilesKeepTheRouterF32LikeLlamaQuantize) {
  for (const Variant* v : {&kVariants[5], &kVariants[6]}) {  // qwen2moe, qwen3moe
    const Built b = build(*v, 0, gguf::TensorType::kQ8_0);
    ASSERT_TRUE(b.model != nullptr) << v->label;
    const gguf::TensorInfo* router = b.file().tensor("blk.0.ffn_gate_inp.weight");
    const gguf::TensorInfo* experts = b.file().tensor("blk.0.ffn_up_exps.weight");
    ASSERT_TRUE(router != nullptr && experts != nullptr) << v->label;
    EXPECT_EQ(router->type, gguf::TensorType::kF32) << v->label;
    EXPECT_EQ(experts->type, gguf::TensorType::kQ8_0) << v->label;
  }
}

TEST(ArchitectureFeatures, EachFeatureChangesTheLogits) {
  EXPECT_GT(without_feature(kVariants[3], [](ModelConfig& c) { c.attn_bias = false; }), 1e-2) << "qwen2 bias";
  EXPECT_GT(without_feature(kVariants[3], [](ModelConfig& c) { c.rope_neox = false; }), 1e-2) << "NeoX RoPE";
  EXPECT_GT(without_feature(kVariants[4], [](ModelConfig& c) { c.qk_norm = false; }), 1e-2) << "qwen3 QK norm";
  EXPECT_GT(without_feature(kVariants[5], [](ModelConfig& c) { c.shared_expert_gate = false; }), 1e-2)
      << "qwen2moe shared expert gate";
  EXPECT_GT(without_feature(kVariants[5], [](ModelConfig& c) { c.moe_renormalize = true; }), 1e-2)
      << "qwen2moe raw top-k probabilities";
  EXPECT_GT(without_feature(kVariants[6], [](ModelConfig& c) { c.moe_renormalize = false; }), 1e-2)
      << "qwen3moe renormalised top-k";
  EXPECT_GT(without_feature(kVariants[2], [](ModelConfig& c) { c.rope_freq_scale = 1.0f; }), 1e-2) << "linear RoPE";
  const Variant& gemma2 = kVariants[8];
  EXPECT_GT(without_feature(gemma2, [](ModelConfig& c) { c.scale_embeddings = false; }), 1e-2) << "gemma2 embedding scale";
  EXPECT_GT(without_feature(gemma2, [](ModelConfig& c) { c.ffn_gelu = false; }), 1e-2) << "gemma2 GELU";
  EXPECT_GT(without_feature(gemma2, [](ModelConfig& c) { c.post_norms = false; }), 1e-2) << "gemma2 sandwich norms";
  // Logits of a few units sit where tanh is nearly linear: 8.8e-3 here, still 40x the tolerance.
  EXPECT_GT(without_feature(gemma2, [](ModelConfig& c) { c.final_softcap = 0; }), 2e-3) << "gemma2 final soft-cap";
  // The window: the windowed rows against references that attend to every key.
  EXPECT_GT(without_feature(kGemma2Window, [](ModelConfig& c) { c.sliding_window = 0; }), 1e-2) << "gemma2 window";
  EXPECT_GT(without_feature(kGemma3, [](ModelConfig& c) { c.sliding_window = 0; }), 1e-2) << "gemma3 window";
  EXPECT_GT(without_feature(kGemma3, [](ModelConfig& c) { c.rope_local_theta = 1e6f; }), 1e-2)
      << "gemma3 local RoPE base";
  EXPECT_GT(without_feature(kGemma3LinearRope, [](ModelConfig& c) { c.rope_freq_scale = 1.0f; }), 1e-2)
      << "gemma3 linear scaling of the global layer";
  EXPECT_GT(without_feature(kGemma3, [](ModelConfig& c) { c.qk_norm = false; }), 1e-2) << "gemma3 QK norm";
  // Llama 3's divisors slow only the low frequencies: 2.9e-3 here, still 15x the tolerance.
  EXPECT_GT(without_feature(kVariants[1], [](ModelConfig&) {}, &kVariants[0]), 1e-3) << "Llama 3 rope_freqs";
}

// ggml's 16-bit arithmetic (llama.cpp's default F16 cache, its GELU table): an f16 cache,
// operands rounded to it and the fp16 GELU table each move gemma2's logits, and together they stay
// within 16-bit rounding of the float64 reference (the fp32 engine is 2e-4 from it).
TEST(ArchitectureFeatures, GgmlsSixteenBitArithmeticMovesTheLogitsOnlyByItsRounding) {
  Built b = build(kVariants[8], 0, gguf::TensorType::kF32);
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  using Knobs = std::vector<std::pair<std::string, std::string>>;
  Knobs f16_cache;
  for (int l = 0; l < b.model->config().n_layers; ++l) f16_cache.push_back({fmt::format("engine.kv_dtype.layer[{}]", l), "f16"});
  Knobs operands = f16_cache, gelu = {{"engine.gelu", "fp16_table"}}, all = operands;
  operands.push_back({"engine.attention.operands", "cache_type"});
  all.push_back({"engine.attention.operands", "cache_type"});
  all.push_back({"engine.gelu", "fp16_table"});
  auto run = [&](const Knobs& kv) {
    Config knobs;
    for (const auto& [k, v] : kv) EXPECT_TRUE(knobs.set(k, v).has_value()) << k;
    auto session = b.model->new_session(**pool, 64, knobs);
    EXPECT_TRUE(session.has_value());
    std::vector<float> out;
    for (int i = 0; i < 30; ++i) {
      auto l = (*session)->step(kTokens[size_t(i) % kTokens.size()]);
      out.insert(out.end(), l->begin(), l->end());
    }
    return out;
  };
  auto differ = [](const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
  };
  const std::vector<float> base = run({}), cache = run(f16_cache), rounded = run(operands), table = run(gelu), ggml = run(all);
  EXPECT_GT(differ(base, cache), 0.0) << "the f16 cache";
  EXPECT_GT(differ(cache, rounded), 0.0) << "q and the weights rounded to f16";
  EXPECT_GT(differ(base, table), 0.0) << "the GELU table";
  HybridReference ref(b.file(), b.model->config());
  std::vector<double> want;
  for (int i = 0; i < 30; ++i) {
    const std::vector<double> l = ref.step(kTokens[size_t(i) % kTokens.size()]);
    want.insert(want.end(), l.begin(), l.end());
  }
  EXPECT_LT(worst_rel(ggml, want), 1e-2);
  EXPECT_GT(worst_rel(ggml, want), worst_rel(base, want));
}

// engine.ggml_arithmetic's attention (RoPE by ggml's caches and rotation, Q scaled first on gemma2 /
// gemma3 / phi3, the core as llm_build_kqv on f16 and f32 layers): on each attention shape it moves
// the logits (the path is taken), yet decode and prefill stay within 16-bit rounding of the
// float64 reference (a scale applied twice or a wrong rotation would not).
TEST(ArchitectureFeatures, GgmlArithmeticAttentionMovesTheLogitsOnlyByItsRounding) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  using Knobs = std::vector<std::pair<std::string, std::string>>;
  for (const Variant* v : {&kVariants[1], &kVariants[3], &kVariants[7], &kGemma2Window, &kGemma3})
    for (const char* dtype : {"f16", "f32"}) {
      Built b = build(*v, 0, gguf::TensorType::kF32);
      ASSERT_TRUE(b.model);
      Knobs off = {{"kernel.gemm.f16_activations", "f32"}};
      for (int l = 0; l < b.model->config().n_layers; ++l) off.push_back({fmt::format("engine.kv_dtype.layer[{}]", l), dtype});
      Knobs on = off;
      on.push_back({"engine.ggml_arithmetic", "avx512"});
      auto session = [&](const Knobs& kv) {
        Config knobs;
        for (const auto& [k, val] : kv) EXPECT_TRUE(knobs.set(k, val).has_value()) << k;
        auto s = b.model->new_session(**pool, 64, knobs);
        EXPECT_TRUE(s.has_value());
        return std::move(*s);
      };
      auto decode = [&](const Knobs& kv) {
        auto s = session(kv);
        std::vector<float> out;
        for (int i = 0; i < 40; ++i) {
          auto l = s->step(kTokens[size_t(i) % kTokens.size()]);
          out.insert(out.end(), l->begin(), l->end());
        }
        return out;
      };
      const std::string where = fmt::format("{} {} cache", v->label, dtype);
      const std::vector<float> plain = decode(off), ggml = decode(on);
      double moved = 0;
      for (size_t i = 0; i < plain.size(); ++i) moved = std::max(moved, std::fabs(double(plain[i]) - double(ggml[i])));
      EXPECT_GT(moved, 0.0) << where;
      HybridReference ref(b.file(), b.model->config());
      std::vector<double> want;
      for (int i = 0; i < 40; ++i) {
        const std::vector<double> l = ref.step(kTokens[size_t(i) % kTokens.size()]);
        want.insert(want.end(), l.begin(), l.end());
      }
      EXPECT_LT(worst_rel(ggml, want), 1e-2) << where;
      // A prefill of the first 10 tokens (one product of 10 tokens per layer) ends where decode does.
      auto batched = session(on);
      auto got = batched->prefill(kTokens);
      ASSERT_TRUE(got.has_value()) << got.error().message();
      const size_t vocab = got->size();
      EXPECT_LT(worst_rel(*got, std::vector<double>(want.begin() + 9 * int64_t(vocab), want.begin() + 10 * int64_t(vocab))), 1e-2)
          << where;
    }
}

// ggml's GELU table: fp16 in, fp16 out, gelu_tanh between; the tails as ggml_vec_gelu_f32 has them.
TEST(ArchitectureFeatures, TheGeluTableIsGeluOfFp16RoundedToFp16) {
  EXPECT_EQ(gelu_fp16_table(-10.0f), 0.0f);
  EXPECT_EQ(gelu_fp16_table(-123.0f), 0.0f);
  EXPECT_EQ(gelu_fp16_table(10.0f), 10.0f);
  EXPECT_EQ(gelu_fp16_table(1234.5f), 1234.5f);
  int rounded_away = 0;
  for (float x = -9.99f; x < 10.0f; x += 0.0137f) {
    const float y = gelu_fp16_table(x);
    EXPECT_EQ(y, fp16_to_fp32(fp32_to_fp16(y))) << x << ": not an fp16 value";
    const float h = fp16_to_fp32(fp32_to_fp16(x));  // ggml's contraction: fma(a h, h, 1)
    const float g = 0.5f * h * (1.0f + std::tanh(0.7978845608028654f * h * std::fma(0.044715f * h, h, 1.0f)));
    EXPECT_EQ(y, fp16_to_fp32(fp32_to_fp16(g))) << x;
    EXPECT_LE(std::fabs(y - gelu_tanh(x)), 2e-3f * std::max(1.0f, std::fabs(x))) << x;
    rounded_away += y != gelu_tanh(x);
  }
  EXPECT_GT(rounded_away, 1000) << "the table rounds, unlike gelu_tanh";
  // The one entry where the contraction decides the fp16 result (libggml-cpu.so's is -0.0455017).
  EXPECT_EQ(gelu_fp16_table(-1.99865294f), fp16_to_fp32(fp32_to_fp16(-0.045501709f)));
}

// TP splits biases by head and the shared expert (its own width) by column; layer split holds
// each attention layer (with its features) whole on one rank; EP runs the raw top-k
// probabilities of qwen2moe through dispatch and combine.
TEST(ArchitectureFeatures, TensorAndExpertParallelEqualOneRank) {
  for (const Variant* v : {&kVariants[3], &kVariants[4], &kVariants[5], &kVariants[7], &kVariants[8], &kGemma3}) {
    Built b = build(*v, 0, gguf::TensorType::kF32);
    auto pool = ThreadPool::create({.threads = 1, .pin = false});
    auto one = b.model->new_session(**pool, 32, Config());
    ASSERT_TRUE(one.has_value());
    std::vector<std::vector<float>> want;
    for (int token : kTokens) {
      auto l = (*one)->step(token);
      want.emplace_back(l->begin(), l->end());
    }
    using Knobs = std::vector<std::pair<const char*, const char*>>;
    std::vector<Knobs> splits = {{{"engine.tp", "2"}}, {{"engine.tp", "2"}, {"engine.layer_split", "on"}}};
    if (b.model->config().n_experts > 0) splits.push_back({{"engine.ep", "2"}});
    for (const Knobs& split_knobs : splits) {
      Config knobs;
      for (auto [knob, value] : split_knobs) ASSERT_TRUE(knobs.set(knob, value).has_value());
      const std::string what = fmt::format("{} {} knobs, first {}", v->label, split_knobs.size(), split_knobs[0].first);
      auto split = b.model->new_session(**pool, 32, knobs);
      ASSERT_TRUE(split.has_value()) << what << ": " << split.error().message();
      for (size_t i = 0; i < kTokens.size(); ++i) {
        auto l = (*split)->step(kTokens[i]);
        ASSERT_TRUE(l.has_value());
        EXPECT_LT(worst_rel(*l, std::vector<double>(want[i].begin(), want[i].end())), 1e-5) << what;
      }
    }
  }
}

// The attention soft-cap matters where scores are large: a cap of 1 against none.
TEST(ArchitectureFeatures, AttentionSoftCapChangesTheLogits) {
  Built b = build(kVariants[8], 0, gguf::TensorType::kF32);
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  auto session = b.model->new_session(**pool, 32, Config());
  ModelConfig c = b.model->config();
  c.attn_softcap = 0;
  HybridReference uncapped(b.file(), c);
  double worst = 0;
  for (int token : kTokens) worst = std::max(worst, worst_rel(*(*session)->step(token), uncapped.step(token)));
  // With random weights the scaled scores stay far below 50, so the cap moves them little.
  EXPECT_GT(worst, 2e-6);
  ModelConfig tight = b.model->config();
  tight.attn_softcap = 1.0f;  // the reference with a cap the native (50) does not have
  HybridReference capped(b.file(), tight);
  auto again = b.model->new_session(**pool, 32, Config());
  worst = 0;
  for (int token : kTokens) worst = std::max(worst, worst_rel(*(*again)->step(token), capped.step(token)));
  EXPECT_GT(worst, 1e-2);
}

// Sequences far past the window (pages of the cache wholly before it): 40 decode steps against
// the float64 reference, then a 40-token prefill (chunks of 16-row query blocks) against the
// reference's last logits.
TEST(ArchitectureFeatures, SequencesPastTheSlidingWindowMatchTheReference) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (const Variant* v : {&kGemma2Window, &kGemma3, &kGemma3LinearRope})
    for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kQ8_0}) {
      SCOPED_TRACE(fmt::format("{} {}", v->label, gguf::tensor_type_name(uint32_t(dtype))));
      Built b = build(*v, 1, dtype);
      ASSERT_TRUE(b.model);
      auto session = b.model->new_session(**pool, 48, f32_knobs());
      ASSERT_TRUE(session.has_value()) << session.error().message();
      HybridReference ref(b.file(), b.model->config());
      std::vector<int> tokens;
      std::vector<double> last;
      for (int i = 0; i < 40; ++i) {
        tokens.push_back((kTokens[size_t(i) % kTokens.size()] + i) % 400);
        auto logits = (*session)->step(tokens.back());
        ASSERT_TRUE(logits.has_value()) << logits.error().message();
        last = ref.step(tokens.back());
        ASSERT_LT(worst_rel(*logits, last), 2e-4) << "position " << i;
      }
      auto prefilled = b.model->new_session(**pool, 48, f32_knobs());
      ASSERT_TRUE(prefilled.has_value());
      auto got = (*prefilled)->prefill(tokens);
      ASSERT_TRUE(got.has_value()) << got.error().message();
      EXPECT_LT(worst_rel(*got, last), 2e-4);
    }
}

TEST(ArchitectureTable, AnUnknownArchitectureIsRefusedNamingTheFileAndTheSupportedList) {
  auto w = synthetic_model({config_for(kVariants[0], 0), gguf::TensorType::kF32, 1});
  ASSERT_TRUE(w.has_value());
  w->set("general.architecture", gguf::Value::of_string("mamba"));
  std::vector<std::byte> bytes = w->serialize();
  auto f = gguf::parse(bytes, "mamba.gguf");
  ASSERT_TRUE(f.has_value());
  auto m = model_from_file(std::move(*f));
  ASSERT_FALSE(m.has_value());
  const std::string& msg = m.error().message();
  EXPECT_NE(msg.find("mamba.gguf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'mamba'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(supported_architectures()), std::string::npos) << msg;
  for (const Architecture& a : architectures()) EXPECT_EQ(arch_name(a.arch), a.name);
}

// The keys llama.cpp reads round-trip: a qwen2moe file names its expert and shared widths.
TEST(ArchitectureTable, MoeWidthsAndRopeScalingRoundTrip) {
  Variant v{"qwen2moe_linear", "qwen2moe", false, 2.0f};
  Built b = build(v, 0, gguf::TensorType::kF32);
  const ModelConfig& c = b.model->config();
  EXPECT_EQ(c.arch, Arch::kQwen2Moe);
  EXPECT_EQ(c.ffn_dim, 64);
  EXPECT_EQ(c.shared_width(), 96);
  EXPECT_EQ(c.rope_freq_scale, 0.5f);
  EXPECT_TRUE(c.shared_expert_gate && c.attn_bias && c.rope_neox && !c.moe_renormalize);
  ASSERT_NE(b.file().find("qwen2moe.expert_feed_forward_length"), nullptr);
  ASSERT_NE(b.file().find("qwen2moe.expert_shared_feed_forward_length"), nullptr);
}

}  // namespace
}  // namespace recur
