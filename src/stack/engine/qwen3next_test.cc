// qwen3next (qwen3next.h) against its float64 reference (reference/qwen3next_reference.h,
// written from Hugging Face's modeling code) on random models in llama.cpp's layout: two shapes
// in F32, F16 and Q8_0; prefill equals token-by-token decode for KDA variants and ReplaySSM; the
// file's keys and tensor names; tensor and expert parallelism and layer split equal one rank;
// what is refused.
#include "engine/qwen3next.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/thread_pool.h"
#include "engine/architectures.h"
#include "engine/reference_test_util.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

// Shape A: the 3:1 interleave of Qwen3-Next (full_attention_interval 4), GQA 4 on 2 KV heads of
// 16 with a quarter rotated, DeltaNet 4 value heads on 2 key heads of 16, 4 experts (top 2) of
// 32 plus a shared expert of 64 (test_models.h).
ModelConfig shape_a() { return testing::tiny_qwen3next_config(); }

// Shape B (test_models.h): interval 2 over 3 layers (DeltaNet, attention, DeltaNet), one KV head
// of 32 with 8 rotated, DeltaNet 2 value heads on 1 key head of 32, 3 conv taps, 6 experts (top 3).
ModelConfig shape_b() { return testing::tiny_qwen3next_interval2_config(); }

struct Built {
  std::vector<std::byte> bytes;
  std::unique_ptr<Model> model;
};

Result<std::unique_ptr<Model>> load(const std::vector<std::byte>& bytes) {
  RECUR_ASSIGN_OR_RETURN(gguf::File f, gguf::parse(bytes, "qwen3next.gguf"));
  // Not regrouped: regrouped Q8_0 always meets Q8_0 activations, and exact_knobs() wants fp32.
  return model_from_file(std::move(f), {.regroup_q8_0 = false, .regroup_f16 = false});
}

Built make(const ModelConfig& c, gguf::TensorType dtype) {
  Built b;
  auto w = synthetic_model({.config = c, .dtype = dtype, .seed = 11});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  if (!w) return b;
  b.bytes = w->serialize();
  auto m = load(b.bytes);
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  if (m) b.model = std::move(*m);
  return b;
}

using testing::expect_prefill_equals_steps;
using testing::session;

// docs/engine.md, "qwen3next": |engine - reference| <= 2e-4 * max(1, max |logit|) at every step
// of a 5-token prompt and 7 greedy steps, and the greedy tokens are the same.
void expect_matches_reference(const ModelConfig& c, gguf::TensorType dtype, const char* what) {
  Built b = make(c, dtype);
  ASSERT_TRUE(b.model) << what;
  const double worst = testing::expect_engine_matches_reference(*b.model, what);
  std::printf("%s: largest |engine - f64| / max(1, max |logit|) = %.2e\n", what, worst);
}

TEST(Qwen3Next, ShapeAMatchesTheFloat64Reference) {
  expect_matches_reference(shape_a(), gguf::TensorType::kF32, "A f32");
  expect_matches_reference(shape_a(), gguf::TensorType::kF16, "A f16");
  expect_matches_reference(shape_a(), gguf::TensorType::kQ8_0, "A q8_0");
}

TEST(Qwen3Next, ShapeBMatchesTheFloat64Reference) {
  expect_matches_reference(shape_b(), gguf::TensorType::kF32, "B f32");
  expect_matches_reference(shape_b(), gguf::TensorType::kF16, "B f16");
  expect_matches_reference(shape_b(), gguf::TensorType::kQ8_0, "B q8_0");
}

// synthetic.h's rule on random qwen3next files of every storage type: each layer's residual RMS
// stays within [0.3, 3] over 32 steps (finite, neither collapsing nor exploding).
TEST(Qwen3Next, ActivationsStayFiniteAndAliveThroughEveryLayer) {
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kF16, gguf::TensorType::kBF16, gguf::TensorType::kQ8_0}) {
    Built b = make(shape_a(), dtype);
    ASSERT_TRUE(b.model);
    auto pool = ThreadPool::create({.threads = 1, .pin = false});
    auto s = session(*b.model, **pool, Config(), 40);
    ASSERT_TRUE(s);
    std::vector<double> layer_rms(size_t(b.model->config().n_layers));
    s->set_layer_observer([&](int layer, std::span<const float> x) {
      double ss = 0;
      for (float v : x) ss += std::isfinite(v) ? double(v) * v : 1e300;
      layer_rms[size_t(layer)] = std::sqrt(ss / double(x.size()));
    });
    for (int t = 0; t < 32; ++t) {
      ASSERT_TRUE(s->step(5 + 11 * t).has_value());
      for (size_t l = 0; l < layer_rms.size(); ++l) {
        EXPECT_GT(layer_rms[l], 0.3) << "layer " << l << " collapsed";
        EXPECT_LT(layer_rms[l], 3.0) << "layer " << l << " exploded or went non-finite";
      }
    }
  }
}

// W8A8 files (ssm_ba's rows regathered with their scales): within the int8 activation rounding
// of the float64 reference, which reads the same int8 weights and scales exactly.
TEST(Qwen3Next, W8A8StaysWithinActivationRoundingOfTheReference) {
  Built b = make(shape_a(), gguf::TensorType::kI8);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  Config ref_knobs;
  ASSERT_TRUE(ref_knobs.set("engine.numerics", "f64_reference").has_value());
  auto fast = session(*b.model, **pool, Config());
  auto ref = session(*b.model, **pool, ref_knobs);
  ASSERT_TRUE(fast && ref);
  double worst = 0;
  for (int token : {17, 250, 3, 399, 64, 1}) {
    auto got = fast->step(token);
    ASSERT_TRUE(got.has_value());
    const std::vector<float> g(got->begin(), got->end());
    auto want = ref->step(token);
    ASSERT_TRUE(want.has_value());
    double err = 0, scale = 0;
    for (size_t v = 0; v < g.size(); ++v) {
      ASSERT_TRUE(std::isfinite(g[v]));
      err = std::max(err, std::fabs(double(g[v]) - double((*want)[v])));
      scale = std::max(scale, std::fabs(double((*want)[v])));
    }
    EXPECT_LT(err, 0.05 * std::max(1.0, scale)) << "token " << token;
    worst = std::max(worst, err / std::max(1.0, scale));
  }
  std::printf("w8a8: largest |engine - f64| / max(1, max |logit|) = %.2e\n", worst);
}

// The KDA knobs act on the gated DeltaNet layers: every decode and prefill variant, and ReplaySSM.
TEST(Qwen3Next, PrefillEqualsTokenByTokenDecodeForKdaVariants) {
  for (const ModelConfig& c : {shape_a(), shape_b()}) {
    Built b = make(c, gguf::TensorType::kF32);
    ASSERT_TRUE(b.model);
    auto pool = ThreadPool::create({.threads = 2, .pin = false});
    const std::vector<std::pair<const char*, const char*>> knobs = {
        {"engine.kda.decode_variant", "vtile"},      {"engine.kda.decode_variant", "hoisted_recip"},
        {"engine.kda.prefill_variant", "recurrent"}, {"engine.kda.prefill_variant", "chunked16"},
        {"engine.kda.replay", "on"}};
    for (const auto& [knob, value] : knobs) {
      Config k;
      ASSERT_TRUE(k.set(knob, value).has_value()) << knob;
      expect_prefill_equals_steps(*b.model, **pool, k, std::string(knob) + "=" + value);
    }
  }
}

// Two sequences' prompts interleaved in one forward, then a batched decode step, give what each
// gives alone (the q / gate split and the decay broadcast over rows of several runs).
TEST(Qwen3Next, SequencesInOneBatchMatchSessionsAlone) {
  for (const ModelConfig& c : {shape_a(), shape_b()}) {
    Built b = make(c, gguf::TensorType::kF32);
    ASSERT_TRUE(b.model);
    testing::expect_batched_sequences_match_alone(*b.model);
  }
}

// The keys and tensors are llama.cpp's (src/llama-arch.cpp LLM_ARCH_QWEN3NEXT, the converter's
// Qwen3NextModel), and read back to the same config.
TEST(Qwen3Next, WritesAndReadsLlamaCppsLayout) {
  const ModelConfig c = shape_a();
  Built b = make(c, gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  const gguf::File& f = static_cast<const TransformerModel&>(*b.model).file();
  auto u32 = [&](const char* key) {
    const gguf::Value* v = f.find(std::string("qwen3next.") + key);
    return v ? *v->as_int() : -1;
  };
  EXPECT_EQ(u32("ssm.conv_kernel"), 4);
  EXPECT_EQ(u32("ssm.state_size"), 16);
  EXPECT_EQ(u32("ssm.group_count"), 2);
  EXPECT_EQ(u32("ssm.time_step_rank"), 4);
  EXPECT_EQ(u32("ssm.inner_size"), 64);
  EXPECT_EQ(u32("full_attention_interval"), 4);
  EXPECT_EQ(u32("rope.dimension_count"), 4);
  EXPECT_EQ(u32("expert_shared_feed_forward_length"), 64);
  for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_conv1d.weight",
                           "blk.0.ssm_ba.weight", "blk.0.ssm_a", "blk.0.ssm_dt.bias", "blk.0.ssm_norm.weight",
                           "blk.0.ssm_out.weight", "blk.0.post_attention_norm.weight", "blk.3.attn_q_norm.weight",
                           "blk.3.attn_q.weight", "blk.3.ffn_gate_inp_shexp.weight"})
    EXPECT_NE(f.tensor(name), nullptr) << name;
  EXPECT_EQ(f.tensor("blk.0.ffn_norm.weight"), nullptr);
  EXPECT_EQ(f.tensor("blk.3.attn_q.weight")->dims, (std::vector<uint64_t>{64, 2 * 4 * 16}));  // q and gate rows
  EXPECT_EQ(f.tensor("blk.0.ssm_a")->dims, (std::vector<uint64_t>{4}));
  EXPECT_EQ(f.tensor("blk.0.ssm_conv1d.weight")->dims, (std::vector<uint64_t>{4, 2 * 32 + 64}));
  const ModelConfig& read = b.model->config();
  EXPECT_EQ(read.layer_pattern, "kkka");
  EXPECT_EQ(read.rotary_dims(), 4);
  EXPECT_TRUE(read.is_kda_layer(2) && !read.is_kda_layer(3));
  EXPECT_TRUE(read.attn_output_gate && read.kda_scalar_decay && read.kda_gate_silu && read.moe_renormalize);
}

// engine.tp=2 (heads, the gate rows with their heads, experts' columns), engine.ep=2 and
// engine.tp=2 with layer split give one rank's logits.
TEST(Qwen3Next, RankSplitsMatchOneRank) {
  Built b = make(shape_a(), gguf::TensorType::kF32);
  ASSERT_TRUE(b.model);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  const std::vector<TokenId> prompt = {5, 17, 230, 8, 99, 3};
  auto run = [&](const Config& k) {
    auto s = session(*b.model, **pool, k);
    std::vector<float> out;
    if (!s) return out;
    auto p = s->prefill(prompt);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    if (!p) return out;
    out.assign(p->begin(), p->end());
    auto x = s->step(42);
    EXPECT_TRUE(x.has_value());
    if (x) out.insert(out.end(), x->begin(), x->end());
    return out;
  };
  const std::vector<float> one = run(Config());
  ASSERT_FALSE(one.empty());
  const std::vector<std::vector<std::pair<const char*, const char*>>> splits = {
      {{"engine.tp", "2"}}, {{"engine.ep", "2"}}, {{"engine.tp", "2"}, {"engine.layer_split", "on"}}};
  for (const auto& split : splits) {
    Config k;
    std::string what;
    for (const auto& [knob, value] : split) {
      ASSERT_TRUE(k.set(knob, value).has_value()) << knob;
      what += std::string(knob) + "=" + value + " ";
    }
    const std::vector<float> got = run(k);
    ASSERT_EQ(got.size(), one.size()) << what;
    for (size_t v = 0; v < got.size(); ++v) ASSERT_NEAR(got[v], one[v], 1e-5) << what << v;
  }
}

// A file whose DeltaNet layer has only the legacy fused ssm_in, or whose value heads differ in
// width from the key heads, is refused by name.
TEST(Qwen3Next, RefusesWhatItDoesNotRun) {
  auto w = synthetic_model({.config = shape_a(), .dtype = gguf::TensorType::kF32, .seed = 3});
  ASSERT_TRUE(w.has_value());
  std::vector<std::byte> bytes = w->serialize();
  auto f = gguf::parse(bytes, "legacy.gguf");
  ASSERT_TRUE(f.has_value());
  gguf::Writer renamed;  // the same file with layer 1's attn_qkv under the legacy name
  for (const auto& [key, value] : f->metadata) renamed.set(key, value);
  for (const gguf::TensorInfo& t : f->tensors)
    ASSERT_TRUE(renamed
                    .add_tensor(t.name == "blk.1.attn_qkv.weight" ? "blk.1.ssm_in.weight" : t.name, t.type, t.dims,
                                std::span<const std::byte>(t.data, size_t(t.bytes)))
                    .has_value());
  const std::vector<std::byte> legacy_bytes = renamed.serialize();
  auto legacy = load(legacy_bytes);
  ASSERT_FALSE(legacy.has_value());
  EXPECT_NE(legacy.error().message().find("legacy fused 'blk.1.ssm_in.weight'"), std::string::npos)
      << legacy.error().message();

  w->set("qwen3next.ssm.inner_size", gguf::Value::of_u32(32));
  bytes = w->serialize();
  auto wide = load(bytes);
  ASSERT_FALSE(wide.has_value());
  EXPECT_NE(wide.error().message().find("ssm.inner_size 32"), std::string::npos) << wide.error().message();

  w->set("qwen3next.ssm.inner_size", gguf::Value::of_u32(64));
  w->set("qwen3next.attention.recurrent_layers", gguf::Value::of_i32s({1, 1, 1, 0}));
  bytes = w->serialize();
  auto per_layer = load(bytes);
  ASSERT_FALSE(per_layer.has_value());
  EXPECT_NE(per_layer.error().message().find("attention.recurrent_layers"), std::string::npos)
      << per_layer.error().message();

  ModelConfig bad = shape_a();
  bad.layer_pattern = "kak";
  auto refused = synthetic_model({.config = bad});
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("k repeated then one a"), std::string::npos) << refused.error().message();
}

}  // namespace
}  // namespace recur
