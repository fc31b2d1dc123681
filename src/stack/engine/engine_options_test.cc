// engine_options.h: enum knobs take their choices from one name table, the typed options carry
// the knobs' values, and engine_options_from reads (Config::track_reads) only the knobs that act
// on the model it is given.
#include "engine/engine_options.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/test_models.h"

namespace recur {
namespace {

std::vector<std::string> choices_of(const char* knob) {
  const KnobSpec* spec = KnobRegistry::global().find(knob);
  EXPECT_NE(spec, nullptr) << knob;
  return spec != nullptr ? spec->choices : std::vector<std::string>{};
}

TEST(EngineOptions, EnumKnobChoicesComeFromTheirNameTables) {
  EXPECT_EQ(choices_of("engine.numerics"), enum_choices(kNumericsNames));
  EXPECT_EQ(choices_of("engine.weights_memory"), enum_choices(kWeightsMemoryNames));
  EXPECT_EQ(choices_of("engine.weight_layout"), enum_choices(kWeightLayoutNames));
  EXPECT_EQ(choices_of("engine.collectives"), enum_choices(kCollectivesNames));
  EXPECT_EQ(choices_of("engine.tp.reduce_dtype"), enum_choices(kReduceDtypeNames));
  EXPECT_EQ(choices_of("engine.ep.dispatch_mode"), enum_choices(kDispatchModeNames));
  EXPECT_EQ(choices_of("engine.tp"), enum_choices(kRankCountNames));
  EXPECT_EQ(choices_of("engine.layer_split"), enum_choices(kOnOffNames));
  EXPECT_EQ(choices_of("engine.kda.decode_variant"),
            (std::vector<std::string>{"vtile", "vtile_recip", "hoisted", "hoisted_recip"}));
  EXPECT_EQ(choices_of("engine.kv_dtype.layer[]"), (std::vector<std::string>{"f32", "bf16", "fp8_e4m3", "int8", "f16"}));
  EXPECT_EQ(choices_of("engine.attention.operands"), enum_choices(kAttentionOperandsNames));
  EXPECT_EQ(choices_of("engine.gelu"), enum_choices(kGeluFormNames));
}

TEST(EngineOptions, TypedValuesFollowTheKnobs) {
  Config knobs;
  for (auto [k, v] : {std::pair{"engine.tp", "4"}, {"engine.layer_split", "on"}, {"engine.tp.reduce_dtype", "bf16"},
                      {"engine.kda.replay", "on"}, {"engine.kda.decode_variant", "vtile"},
                      {"engine.kv_dtype.layer[3]", "int8"}, {"engine.numerics", "f64_reference"}})
    ASSERT_TRUE(knobs.set(k, v).has_value()) << k;
  auto o = engine_options_from(knobs, testing::tiny_hybrid_config(0));
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->tp, 4);
  EXPECT_TRUE(o->layer_split);
  EXPECT_EQ(o->reduce, ReduceDtype::kBf16);
  EXPECT_TRUE(o->kda.replay);
  EXPECT_EQ(o->kda.decode, kda::DecodeVariant::kVtile);
  EXPECT_EQ(o->numerics, Numerics::kF64Reference);
  ASSERT_FALSE(o->kv_dtypes.empty());
  EXPECT_EQ(o->kv_dtypes.back(), kernels::attention::KvDType::kI8) << "layer 3 is the pattern's attention layer";
  // ggml's summation order has no 16-row form: a load under it keeps Q8_0 in rows.
  Config ggml_order;
  ASSERT_TRUE(ggml_order.set("kernel.gemm.q8_0_activations", "q8_0_ggml").has_value());
  auto ggml_load = load_options_from(ggml_order);
  ASSERT_TRUE(ggml_load.has_value());
  EXPECT_FALSE(ggml_load->model.regroup_q8_0);
  EXPECT_TRUE(ggml_load->model.regroup_f16);
  auto ggml_run = engine_options_from(ggml_order, testing::tiny_hybrid_config(0));
  ASSERT_TRUE(ggml_run.has_value());
  EXPECT_EQ(ggml_run->act.q8, gemm::Q8Activations::kQ8_0Ggml);
  ASSERT_TRUE(knobs.set("engine.weight_layout", "rows").has_value());
  auto load = load_options_from(knobs);
  ASSERT_TRUE(load.has_value());
  EXPECT_FALSE(load->model.regroup_q8_0);
  EXPECT_FALSE(load->model.regroup_f16);
}

// kernel.kda_*.variant name the registered KDA kernels' variants the forward runs; "auto" keeps
// engine.kda.*'s choice (today's default); the paged attention kernels resolve like the others.
TEST(EngineOptions, KernelVariantKnobsChooseTheKdaAndAttentionKernels) {
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.kda.decode_variant", "vtile").has_value());
  auto o = engine_options_from(knobs, testing::tiny_hybrid_config(0));
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->kda.decode, kda::DecodeVariant::kVtile) << "auto keeps engine.kda.decode_variant";
  EXPECT_EQ(o->kda.replay_decode, kda::DecodeVariant::kVtile);
  EXPECT_EQ(o->kda.prefill, kda::PrefillVariant::kRecurrent);
  for (auto [k, v] : {std::pair{"kernel.kda_decode.variant", "hoisted_recip"},
                      {"kernel.kda_replay_decode.variant", "vtile_recip"}, {"kernel.kda_prefill.variant", "chunked16"},
                      {"kernel.attention_decode.variant", "scalar"}, {"kernel.attention_prefill.variant", "scalar"}})
    ASSERT_TRUE(knobs.set(k, v).has_value()) << k;
  o = engine_options_from(knobs, testing::tiny_hybrid_config(0));
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_EQ(o->kda.decode, kda::DecodeVariant::kHoistedRecip);
  EXPECT_EQ(o->kda.replay_decode, kda::DecodeVariant::kVtileRecip);
  EXPECT_EQ(o->kda.prefill, kda::PrefillVariant::kChunked16);
  EXPECT_EQ(o->kernels.attention_decode.variant, "scalar");
  EXPECT_EQ(o->kernels.attention_decode.isa, Isa::kScalar);
  EXPECT_EQ(o->kernels.attention_prefill.variant, "scalar");
  ASSERT_TRUE(knobs.set("kernel.attention_decode.variant", "avx2_split4").has_value());
  o = engine_options_from(knobs, testing::tiny_hybrid_config(0));
  if (active_isa() >= Isa::kAvx2) {
    ASSERT_TRUE(o.has_value()) << o.error().message();
    EXPECT_EQ(o->kernels.attention_decode_split_k, 4);
  } else {
    ASSERT_FALSE(o.has_value());
    EXPECT_NE(o.error().message().find("kernel.attention_decode.variant"), std::string::npos) << o.error().message();
  }
}

TEST(EngineOptions, ReadsOnlyTheKnobsThatActOnTheModel) {
  auto read_for = [](const ModelConfig& c) {
    Config knobs;
    auto reads = knobs.track_reads();
    EXPECT_TRUE(engine_options_from(knobs, c).has_value());
    return reads->names();
  };
  auto has = [](const std::vector<std::string>& v, const std::string& name) {
    return std::find(v.begin(), v.end(), name) != v.end();
  };
  const ModelConfig llama = testing::tiny_llama_config();
  const std::vector<std::string> l = read_for(llama);
  EXPECT_TRUE(has(l, "engine.tp"));
  EXPECT_TRUE(has(l, fmt::format("engine.kv_dtype.layer[{}]", llama.n_layers - 1)));
  EXPECT_FALSE(has(l, "engine.kda.decode_variant")) << "llama has no KDA layer";
  const ModelConfig hybrid = testing::tiny_hybrid_config(0);
  const std::vector<std::string> h = read_for(hybrid);
  EXPECT_TRUE(has(h, "engine.kda.decode_variant"));
  for (int layer = 0; layer < hybrid.n_layers; ++layer)
    EXPECT_EQ(has(h, fmt::format("engine.kv_dtype.layer[{}]", layer)), !hybrid.is_kda_layer(layer)) << layer;
  EXPECT_FALSE(has(l, "engine.attention.operands")) << "an fp32 cache: the operands are fp32 whatever it says";
  EXPECT_FALSE(has(l, "engine.gelu")) << "llama's FFN is SwiGLU";
}

// engine.attention.operands is read, and lands typed, where a layer's cache is f16 or bf16;
// engine.gelu where the FFN is a GELU one.
TEST(EngineOptions, OperandRoundingAndGeluFormActWhereTheyApply) {
  ModelConfig llama = testing::tiny_llama_config();
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.attention.operands", "cache_type").has_value());
  ASSERT_TRUE(knobs.set("engine.gelu", "fp16_table").has_value());
  auto plain = engine_options_from(knobs, llama);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->attention_operands, kernels::attention::AttentionOperands::kF32) << "no 16-bit cache layer";
  ASSERT_TRUE(knobs.set(fmt::format("engine.kv_dtype.layer[{}]", llama.n_layers - 1), "f16").has_value());
  auto f16 = engine_options_from(knobs, llama);
  ASSERT_TRUE(f16.has_value());
  EXPECT_EQ(f16->kv_dtypes.back(), kernels::attention::KvDType::kF16);
  EXPECT_EQ(f16->attention_operands, kernels::attention::AttentionOperands::kCacheType);
  EXPECT_EQ(f16->gelu, GeluForm::kTanh) << "llama has no GELU";
  llama.ffn_gelu = true;
  auto gelu = engine_options_from(knobs, llama);
  ASSERT_TRUE(gelu.has_value());
  EXPECT_EQ(gelu->gelu, GeluForm::kFp16Table);
}

}  // namespace
}  // namespace recur
