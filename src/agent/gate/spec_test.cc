// Gate specs: a full spec parses into what it says; every mistake is caught before anything runs,
// with the file, line and column and what was expected.
#include "gate/spec.h"

#include <regex>
#include <set>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "engine/architectures.h"

namespace recur::gate {
namespace {

// The knobs these specs use, registered here so the test does not depend on which engine
// objects the linker pulled in.
const KnobRegistry& test_knobs() {
  static KnobRegistry r = [] {
    KnobRegistry k;
    (void)k.add({.name = "engine.tp", .type = KnobType::kEnum, .choices = {"1", "2", "4", "8"}, .default_value = "1"});
    (void)k.add({.name = "kernel.rmsnorm.variant", .type = KnobType::kEnum,
                 .choices = {"auto", "scalar", "avx2", "avx512"}, .default_value = "auto"});
    (void)k.add({.name = "kernel.gemm.precision", .type = KnobType::kEnum, .choices = {"f32", "bf16"},
                 .default_value = "f32"});
    return k;
  }();
  return r;
}

constexpr std::string_view kFull = R"toml(name = "demo"
description = "TP agreement and speed"
conditions = [
  "tokens_equal(tp2 vs tp1)",
  "logits_max_rel_err(tp2 vs tp1) <= 1e-4",
  "decode_tok_s(tp2) >= 0.5 * decode_tok_s(tp1) and decode_tok_s(tp1) > 0",
  "max_rel_err(fast) <= 1e-5 and check_pass(fast)",
  "time_ratio(fast vs tp1) <= 2",
]

[workload]
threads = 1

[workload.engine]
prompts = ["hello world", "once"]
prefill_tokens = 16
decode_tokens = 4
runs = 3

[workload.engine.synthetic]
arch = "llama"
dim = 64

[workload.kernel]
name = "rmsnorm"
shape = "M4,N64"
budget_s = 0.5

[arms.tp1]
"engine.tp" = "1"
[arms.tp2]
engine.tp = 2
[arms.fast]
"kernel.rmsnorm.variant" = "scalar"
kernel.gemm = { precision = "bf16" }
)toml";

Result<GateSpec> parse(std::string_view text) { return parse_gate_spec(text, "spec.toml", test_knobs()); }

std::string error_of(std::string_view text) {
  auto s = parse(text);
  EXPECT_FALSE(s.has_value()) << "parsed: " << text;
  return s ? "" : s.error().message();
}

// `text` with one substring replaced.
std::string edit_text(std::string_view text, std::string_view from, std::string_view to) {
  std::string s(text);
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// kFull with one substring replaced.
std::string edit(std::string_view from, std::string_view to) { return edit_text(kFull, from, to); }

TEST(GateSpec, AFullSpecParsesIntoWhatItSays) {
  auto s = parse(kFull);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->name, "demo");
  EXPECT_EQ(s->threads, 1);
  ASSERT_TRUE(s->engine.has_value());
  EXPECT_EQ(s->engine->model, "synthetic");
  ASSERT_TRUE(s->engine->synthetic.has_value());
  EXPECT_EQ(s->engine->synthetic->dim, 64);
  EXPECT_EQ(s->engine->prompts.size(), 2u);
  EXPECT_EQ(s->engine->runs, 3);
  ASSERT_TRUE(s->kernel.has_value());
  EXPECT_EQ(s->kernel->kernel, "rmsnorm");
  EXPECT_DOUBLE_EQ(s->kernel->budget_s, 0.5);
  // Arms and knobs come in name order (TOML tables are unordered).
  ASSERT_EQ(s->arms.size(), 3u);
  EXPECT_EQ(s->arms[0].name, "fast");
  EXPECT_EQ(s->arms[2].name, "tp2");
  // Nested tables and non-string values flatten to dotted names and text.
  ASSERT_EQ(s->arms[2].knobs.size(), 1u);
  EXPECT_EQ(s->arms[2].knobs[0], (std::pair<std::string, std::string>("engine.tp", "2")));
  ASSERT_EQ(s->arms[0].knobs.size(), 2u);
  EXPECT_EQ(s->arms[0].knobs[0], (std::pair<std::string, std::string>("kernel.gemm.precision", "bf16")));
  EXPECT_EQ(s->arms[0].knobs[1], (std::pair<std::string, std::string>("kernel.rmsnorm.variant", "scalar")));
  ASSERT_EQ(s->conditions.size(), 5u);
  EXPECT_EQ(s->conditions[1].source.line, 5);
  EXPECT_EQ(s->conditions[1].source.column, 4);
  std::vector<std::string> keys;
  for (const MetricRequest& r : s->requests) keys.push_back(r.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"tokens_equal(tp2 vs tp1)", "logits_max_rel_err(tp2 vs tp1)",
                                            "decode_tok_s(tp2)", "decode_tok_s(tp1)", "max_rel_err(fast)",
                                            "check_pass(fast)", "time_ratio(fast vs tp1)"}));
}

TEST(GateSpec, ArmConfigsLayerTheBaseUnderTheArm) {
  auto s = parse(kFull);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  Config base(test_knobs());
  ASSERT_TRUE(base.set("engine.tp", "4").has_value());
  ASSERT_TRUE(base.set("kernel.gemm.precision", "f32").has_value());
  auto tp2 = arm_config(*s, *s->find_arm("tp2"), base);
  ASSERT_TRUE(tp2.has_value());
  EXPECT_EQ(*tp2->get("engine.tp"), "2");              // the arm wins
  EXPECT_EQ(*tp2->get("kernel.gemm.precision"), "f32");  // the base fills in
  auto fast = arm_config(*s, *s->find_arm("fast"), base);
  ASSERT_TRUE(fast.has_value());
  EXPECT_EQ(*fast->get("engine.tp"), "4");
  EXPECT_EQ(*fast->get("kernel.gemm.precision"), "bf16");
}

TEST(GateSpec, ConditionErrorsPointIntoTheFile) {
  std::string m = error_of(edit("decode_tok_s(tp2) >= 0.5", "decode_tok_s(tp3) >= 0.5"));
  EXPECT_NE(m.find("spec.toml:6:17: condition 3: unknown arm 'tp3'; arms: fast, tp1, tp2"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"tokens_eq(tp2 vs tp1)\""));
  EXPECT_NE(m.find("spec.toml:4:4: condition 1: unknown metric 'tokens_eq'; metrics: prefill_tok_s, decode_tok_s,"),
            std::string::npos)
      << m;
  m = error_of(edit("<= 1e-4", "<= 1e-4 +"));
  EXPECT_NE(m.find("spec.toml:5:44: condition 2: expected a number, a metric call"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"tokens_equal(tp2, tp1) + 1 >= 2\""));
  EXPECT_NE(m.find("the left side of '+' must be a number, got a truth value"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"decode_tok_s(tp1) * 2\""));
  EXPECT_NE(m.find("a condition must be a truth value"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"decode_tok_s(tp1 vs tp2) > 0\""));
  EXPECT_NE(m.find("decode_tok_s takes 1 arm, got 2: write decode_tok_s(arm)"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"tokens_equal(tp1)\""));
  EXPECT_NE(m.find("tokens_equal takes 2 arms, got 1: write tokens_equal(a vs b)"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"tokens_equal(tp1, tp1)\""));
  EXPECT_NE(m.find("compares two different arms, got 'tp1' twice"), std::string::npos) << m;
  m = error_of(edit("\"tokens_equal(tp2 vs tp1)\"", "\"zone_time_us(tp1) > 0\""));
  EXPECT_NE(m.find("zone_time_us"), std::string::npos) << m;  // the zone selector is missing
  // A kernel metric without a kernel workload.
  std::string no_kernel = edit("[workload.kernel]\nname = \"rmsnorm\"\nshape = \"M4,N64\"\nbudget_s = 0.5\n", "");
  m = error_of(no_kernel);
  EXPECT_NE(m.find("max_rel_err measures a kernel, but the spec has no [workload.kernel] table"), std::string::npos)
      << m;
}

TEST(GateSpec, KnobErrorsNameTheArmTheKnobAndThePosition) {
  std::string m = error_of(edit("engine.tp = 2", "engine.tpp = 2"));
  EXPECT_NE(m.find("spec.toml:32:14: arm tp2: unknown knob 'engine.tpp'"), std::string::npos) << m;
  m = error_of(edit("engine.tp = 2", "engine.tp = 3"));
  EXPECT_NE(m.find("arm tp2: knob engine.tp: '3' is not one of 1, 2, 4, 8"), std::string::npos) << m;
  m = error_of(edit("\"kernel.rmsnorm.variant\" = \"scalar\"", "\"kernel.rmsnorm.variant\" = \"avx9\""));
  EXPECT_NE(m.find("arm fast: knob kernel.rmsnorm.variant: 'avx9' is not one of auto, scalar"), std::string::npos) << m;
  m = error_of(edit("[arms.tp2]", "[arms.tp-2]"));
  EXPECT_NE(m.find("[arms] tp-2: an arm name is letters, digits and '_'"), std::string::npos) << m;
}

// Arms on different kernels: the episode compares a ReplaySSM step with the plain decode step.
constexpr std::string_view kCrossKernel = R"toml(conditions = [
  "check_pass(cand)",
  "time_us(cand) <= time_us(plain)",
  "time_ratio(cand vs plain) <= 1",
]
[workload.kernel]
name = "kda_replay_decode"
shape = "B1,HK2,HV2,K16,V16,T1,F8"
[arms.cand]
"kernel.kda_replay_decode.variant" = "vtile"
[arms.plain]
kernel = "kda_decode"
shape = "B1,HK2,HV2,K16,V16"
"kernel.kda_decode.variant" = "vtile"
)toml";

std::string cross_error(std::string_view from, std::string_view to) {
  std::string text(kCrossKernel);
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  auto s = parse_gate_spec(text, "cross.toml");
  return s ? std::string("(parsed)") : s.error().message();
}

TEST(GateSpec, ArmsMayNameTheirOwnKernelAndShape) {
  auto s = parse_gate_spec(kCrossKernel, "cross.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  const Arm* plain = s->find_arm("plain");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->kernel, "kda_decode");
  EXPECT_EQ(plain->shape, "B1,HK2,HV2,K16,V16");
  ASSERT_EQ(plain->knobs.size(), 1u);  // kernel and shape are not knobs
  EXPECT_EQ(plain->knobs[0].first, "kernel.kda_decode.variant");
  const KernelWorkload wp = arm_kernel_workload(*s, "plain"), wc = arm_kernel_workload(*s, "cand");
  EXPECT_EQ(wp.kernel, "kda_decode");
  EXPECT_EQ(wp.shape, "B1,HK2,HV2,K16,V16");
  EXPECT_EQ(wc.kernel, "kda_replay_decode");
  EXPECT_EQ(wc.shape, "B1,HK2,HV2,K16,V16,T1,F8");
  EXPECT_EQ(wp.budget_s, wc.budget_s);  // everything else is the workload's
  // A dotted knob name under `kernel` is still a knob.
  std::string dotted = std::string(kCrossKernel);
  dotted.replace(dotted.find("\"kernel.kda_replay_decode.variant\" = \"vtile\""), 44,
                 "kernel.kda_replay_decode.variant = \"hoisted\"");
  auto d = parse_gate_spec(dotted, "cross.toml");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->find_arm("cand")->kernel, "");
  EXPECT_EQ(d->find_arm("cand")->knobs[0].second, "hoisted");
}

TEST(GateSpec, ArmKernelsAndShapesAreCheckedBeforeAnythingRuns) {
  std::string m = cross_error("kernel = \"kda_decode\"", "kernel = \"kda_decod\"");
  EXPECT_NE(m.find("cross.toml:12:10: [arms] plain: kernel: "), std::string::npos) << m;
  EXPECT_NE(m.find("kda_decode"), std::string::npos) << m;  // the kernels that exist
  m = cross_error("kernel = \"kda_decode\"", "kernel = 3");
  EXPECT_NE(m.find("[arms] plain: kernel expected a string"), std::string::npos) << m;
  m = cross_error("shape = \"B1,HK2,HV2,K16,V16\"\n", "shape = \"B1,HK2,HV2,K16,V16,F8\"\n");
  EXPECT_NE(m.find("cross.toml:13:9: [arms] plain: shape 'B1,HK2,HV2,K16,V16,F8' does not fit kernel kda_decode"),
            std::string::npos)
      << m;
  m = cross_error("shape = \"B1,HK2,HV2,K16,V16\"\n", "");  // the workload's shape has T and F
  EXPECT_NE(m.find("(from [workload.kernel]) does not fit kernel kda_decode"), std::string::npos) << m;
  EXPECT_NE(m.find("give the arm its own shape"), std::string::npos) << m;
  m = cross_error("\"kernel.kda_decode.variant\" = \"vtile\"", "\"kernel.kda_replay_decode.variant\" = \"hoisted\"");
  EXPECT_NE(m.find("arm plain: knob kernel.kda_replay_decode.variant chooses a variant of kernel kda_replay_decode, "
                   "but the arm measures kernel kda_decode"),
            std::string::npos)
      << m;
  m = cross_error("\"kernel.kda_replay_decode.variant\" = \"vtile\"", "\"kernel.kda_decode.variant\" = \"vtile\"");
  EXPECT_NE(m.find("add kernel = \"kda_decode\" to the arm"), std::string::npos) << m;
  m = cross_error("\"check_pass(cand)\"", "\"max_rel_err(cand vs plain) <= 1\"");
  EXPECT_NE(m.find("cross.toml:2:4: condition 1: max_rel_err(cand vs plain) compares the outputs of arms on different "
                   "kernels or shapes (kda_replay_decode B1,HK2,HV2,K16,V16,T1,F8 vs kda_decode B1,HK2,HV2,K16,V16)"),
            std::string::npos)
      << m;
  m = cross_error("[workload.kernel]\nname = \"kda_replay_decode\"\nshape = \"B1,HK2,HV2,K16,V16,T1,F8\"\n",
                  "[workload.engine]\n");
  EXPECT_NE(m.find("an arm's kernel and shape need a [workload.kernel] table"), std::string::npos) << m;
}

TEST(GateSpec, TableErrorsNameTheKeyAndWhatWasExpected) {
  std::string m = error_of(edit("runs = 3", "prefil_tokens = 3"));
  EXPECT_NE(m.find("spec.toml:18:17: [workload.engine]: unknown key 'prefil_tokens'; expected one of:"), std::string::npos)
      << m;
  m = error_of(edit("runs = 3", "runs = \"three\""));
  EXPECT_NE(m.find("spec.toml:18:8: [workload.engine] runs: expected an integer in [1, 1000], got a string"),
            std::string::npos)
      << m;
  m = error_of(edit("runs = 3", "batch = 2"));
  EXPECT_NE(m.find("batch must be 1"), std::string::npos) << m;
  m = error_of(edit("name = \"rmsnorm\"", "name = \"rmsnrom\""));
  EXPECT_NE(m.find("[workload.kernel] name: "), std::string::npos) << m;
  EXPECT_NE(m.find("rmsnorm"), std::string::npos) << m;  // the list of kernels
  m = error_of(edit("shape = \"M4,N64\"", "shape = \"Q4\""));
  EXPECT_NE(m.find("[workload.kernel] shape: "), std::string::npos) << m;
  m = error_of(edit("[workload.engine.synthetic]\narch = \"llama\"", "[workload.engine.synthetic]\narch = \"llama\"\n"
                                                                     "model = \"x.gguf\""));
  EXPECT_NE(m.find("unknown key 'model'"), std::string::npos) << m;
  m = error_of("name = \"x\"\n[workload.engine]\n[arms.a]\n");
  EXPECT_NE(m.find("spec.toml: missing 'conditions'"), std::string::npos) << m;
  m = error_of("conditions = [\"tokens_equal(a, b)\"\n");
  EXPECT_TRUE(std::regex_search(m, std::regex("^spec\\.toml:[0-9]+:[0-9]+: "))) << m;  // TOML syntax, positioned
  m = error_of("conditions = [\"decode_tok_s(a) > 0\"]\n[workload.engine]\nmodel = \"no/such/model.gguf\"\n[arms.a]\n");
  EXPECT_NE(m.find("no such file: no/such/model.gguf"), std::string::npos) << m;
}

// kFull with its synthetic table's body (line 21 on) replaced.
std::string synthetic(std::string_view body) { return edit("arch = \"llama\"\ndim = 64", body); }

Result<ModelConfig> synthetic_config(std::string_view body) {
  RECUR_ASSIGN_OR_RETURN(GateSpec s, parse(synthetic(body)));
  RECUR_ASSIGN_OR_RETURN(SyntheticModelOptions o, synthetic_options(*s.engine->synthetic));
  return o.config;
}

// Every row of the architecture table makes a synthetic model at its defaults, each under its
// own cache name; the row's fields reach the config.
TEST(GateSpec, SyntheticModelsCoverEveryArchitectureRow) {
  std::set<std::string> names;
  for (const Architecture& a : architectures()) {
    auto s = parse(synthetic(fmt::format("arch = \"{}\"\ndim = 64", a.name)));
    ASSERT_TRUE(s.has_value()) << a.name << ": " << s.error().message();
    auto c = synthetic_options(*s->engine->synthetic);
    ASSERT_TRUE(c.has_value()) << a.name << ": " << c.error().message();
    EXPECT_EQ(arch_name(c->config.arch), a.name);
    EXPECT_TRUE(names.insert(synthetic_model_name(*s->engine->synthetic)).second) << a.name;
  }
  auto kimi = synthetic_config(
      "arch = \"kimi-linear\"\ndim = 64\nlayers = 4\npattern = \"kkak\"\nkda_head_dim = 16\nffn = 32\nexperts = 6\n"
      "experts_used = 3\nshared_ffn = 64\nkv_lora_rank = 24\nq_lora_rank = 16\nqk_nope = 8\nqk_rope = 4\n"
      "v_head_dim = 12\nleading_dense = 2\ndense_ffn = 96");
  ASSERT_TRUE(kimi.has_value()) << kimi.error().message();
  EXPECT_EQ(kimi->layer_pattern, "kkak");
  EXPECT_EQ(kimi->kda_heads, 4);  // KDA and MLA share head_count
  EXPECT_EQ(kimi->kda_head_dim, 16);
  EXPECT_EQ(kimi->n_experts, 6);
  EXPECT_EQ(kimi->n_experts_used, 3);
  EXPECT_TRUE(kimi->shared_expert);
  EXPECT_EQ(kimi->shared_ffn_dim, 64);
  EXPECT_EQ(kimi->ffn_dim, 32);
  EXPECT_EQ(kimi->n_kv_heads, 1);
  EXPECT_EQ(kimi->kv_lora_rank, 24);
  EXPECT_EQ(kimi->q_lora_rank, 16);
  EXPECT_EQ(kimi->head_dim, 12);
  EXPECT_EQ(kimi->v_head_dim, 12);
  EXPECT_EQ(kimi->leading_dense_layers, 2);
  EXPECT_EQ(kimi->dense_ffn_dim, 96);
  EXPECT_EQ(kimi->expert_gating, ExpertGating::kSigmoid);
  EXPECT_FALSE(kimi->mla_rope);
  auto v2 = synthetic_config("arch = \"deepseek2\"\ndim = 64");
  ASSERT_TRUE(v2.has_value()) << v2.error().message();
  EXPECT_EQ(v2->n_experts, 4);
  EXPECT_EQ(v2->leading_dense_layers, 1);
  EXPECT_EQ(v2->expert_gating, ExpertGating::kSoftmax);
  EXPECT_FALSE(v2->moe_renormalize);
  auto v3 = synthetic_config("arch = \"deepseek2\"\ndim = 64\ngating = \"sigmoid\"\nexperts = 0");
  ASSERT_TRUE(v3.has_value()) << v3.error().message();
  EXPECT_EQ(v3->expert_gating, ExpertGating::kSigmoid);
  EXPECT_EQ(v3->leading_dense_layers, v3->n_layers);  // no experts: every layer dense
  auto q2 = synthetic_config("arch = \"qwen2moe\"\ndim = 64");
  ASSERT_TRUE(q2.has_value()) << q2.error().message();
  EXPECT_EQ(q2->n_experts, 4);
  EXPECT_TRUE(q2->shared_expert);
  auto q3 = synthetic_config("arch = \"qwen3moe\"\ndim = 64\nexperts = 8\nexperts_used = 4");
  ASSERT_TRUE(q3.has_value()) << q3.error().message();
  EXPECT_EQ(q3->n_experts, 8);
  EXPECT_FALSE(q3->shared_expert);
  auto hybrid = synthetic_config("arch = \"hybrid\"\ndim = 64\nkda_head_dim = 16");
  ASSERT_TRUE(hybrid.has_value()) << hybrid.error().message();
  EXPECT_EQ(hybrid->n_experts, 0);  // dense unless asked
  EXPECT_EQ(hybrid->kda_heads, 4);
}

// A synthetic table's mistakes: the position, the field, and what the row takes.
TEST(GateSpec, SyntheticModelErrorsNameTheFieldAndTheRowsItAppliesTo) {
  std::string m = error_of(synthetic("arch = \"gpt\"\ndim = 64"));
  EXPECT_NE(m.find("spec.toml:21:8: [workload.engine.synthetic] arch: expected one of " + supported_architectures() +
                   ", got 'gpt'"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"llama\"\npattern = \"kkka\""));
  EXPECT_NE(m.find("spec.toml:22:11: [workload.engine.synthetic] pattern: arch llama has no place for it (it applies "
                   "to kimi-linear, qwen3next, hybrid)"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"deepseek2\"\nkv_heads = 2"));
  EXPECT_NE(m.find("spec.toml:22:12: [workload.engine.synthetic] kv_heads: arch deepseek2 has no place for it (it "
                   "applies to llama, "),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"qwen2\"\nkv_lora_rank = 16"));
  EXPECT_NE(m.find("22:16: [workload.engine.synthetic] kv_lora_rank: arch qwen2 has no place for it (it applies to "
                   "deepseek2, kimi-linear)"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"kimi-linear\"\ngating = \"softmax\""));
  EXPECT_NE(m.find("gating: arch kimi-linear has no place for it (it applies to deepseek2)"), std::string::npos) << m;
  m = error_of(synthetic("arch = \"deepseek2\"\ngating = \"relu\""));
  EXPECT_NE(m.find("22:10: [workload.engine.synthetic] gating: expected softmax or sigmoid, got 'relu'"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"gemma2\"\nexperts = 4"));
  EXPECT_NE(m.find("experts: arch gemma2 has no place for it (it applies to qwen2moe, qwen3moe, deepseek2, "
                   "kimi-linear, qwen3next, hybrid)"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"qwen3moe\"\nshared_expert = true"));
  EXPECT_NE(m.find("22:17: [workload.engine.synthetic] shared_expert: qwen3moe has no shared expert"), std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"qwen2moe\"\nshared_expert = false"));
  EXPECT_NE(m.find("shared_expert: qwen2moe always has a shared expert"), std::string::npos) << m;
  m = error_of(synthetic("arch = \"qwen2moe\"\nexperts = 0"));
  EXPECT_NE(m.find("22:11: [workload.engine.synthetic] experts: qwen2moe is a MoE architecture: expected at least 1"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"hybrid\"\nshared_expert = true"));
  EXPECT_NE(m.find("shared_expert: a shared expert needs routed experts"), std::string::npos) << m;
  // The sizes together, at the arch: ModelConfig::validate's reason.
  m = error_of(synthetic("arch = \"kimi-linear\"\nffn = 32\nshared_ffn = 40"));
  EXPECT_NE(m.find("spec.toml:21:8: [workload.engine.synthetic] arch: model config: shared expert width 40 is not "
                   "whole experts of 32"),
            std::string::npos)
      << m;
  m = error_of(synthetic("arch = \"hybrid\"\npattern = \"kxa\""));
  EXPECT_NE(m.find("layer pattern 'kxa' must be letters k (KDA) and a (attention)"), std::string::npos) << m;
  m = error_of(synthetic("arch = \"deepseek2\"\nqk_nope = 17\nqk_rope = 3"));
  EXPECT_NE(m.find("rope dims 3 (even)"), std::string::npos) << m;
  m = error_of(synthetic("arch = \"llama\"\nheads = 3\nkv_heads = 2"));
  EXPECT_NE(m.find("3 heads is not a multiple of 2 kv heads"), std::string::npos) << m;
}

// A program workload with every key set (line numbers matter to the error tests below).
constexpr std::string_view kProgram = R"toml(name = "prog"
conditions = ["prefill_ratio(cand vs base) >= 0.95", "prefill_tok_s(cand) > 0"]

[workload.program]
command = ["/bin/sh", "{spec_dir}/bench.sh", "--model", "{model}"]
runs = 4
warmup_runs = 2
best_of = 3
timeout_s = 7.5
model = "synthetic"

[workload.program.synthetic]
arch = "hybrid"
dim = 64
experts = 4
experts_used = 2
shared_expert = true

[workload.program.timeline]
trace_flag = "--trace-out"
background = "name=kv_transfer.send"
foreground = 'name~^moe\.(dispatch|combine)$'

[arms.base]
"engine.tp" = "1"
[arms.cand]
"engine.tp" = "2"
)toml";

std::string program_error(std::string_view from, std::string_view to) { return error_of(edit_text(kProgram, from, to)); }

TEST(GateSpec, AProgramSpecParsesIntoWhatItSays) {
  auto s = parse(kProgram);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_FALSE(s->engine.has_value());
  EXPECT_FALSE(s->kernel.has_value());
  ASSERT_TRUE(s->program.has_value());
  const ProgramWorkload& w = *s->program;
  EXPECT_EQ(w.command, (std::vector<std::string>{"/bin/sh", "{spec_dir}/bench.sh", "--model", "{model}"}));
  EXPECT_EQ(w.runs, 4);
  EXPECT_EQ(w.warmup_runs, 2);
  EXPECT_EQ(w.best_of, 3);
  EXPECT_DOUBLE_EQ(w.timeout_s, 7.5);
  EXPECT_EQ(w.model, "synthetic");
  ASSERT_TRUE(w.synthetic.has_value());
  EXPECT_EQ(w.synthetic->arch, "hybrid");
  EXPECT_EQ(w.synthetic->dim, 64);
  EXPECT_EQ(w.synthetic->experts, 4);
  EXPECT_EQ(w.synthetic->experts_used, 2);
  EXPECT_TRUE(w.synthetic->shared_expert);
  EXPECT_EQ(w.trace_flag, "--trace-out");
  EXPECT_EQ(w.background, "name=kv_transfer.send");
  EXPECT_EQ(w.foreground, "name~^moe\\.(dispatch|combine)$");
  std::vector<std::string> keys;
  for (const MetricRequest& r : s->requests) keys.push_back(r.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"prefill_ratio(cand vs base)", "prefill_tok_s(cand)"}));

  // The defaults: no model, no timeline, one run per sample, no warm-up.
  auto d = parse("conditions = [\"decode_tok_s(a) > 0\"]\n[workload.program]\ncommand = [\"/bin/true\"]\n[arms.a]\n");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->program->model, "");
  EXPECT_FALSE(d->program->synthetic.has_value());
  EXPECT_EQ(d->program->runs, 5);
  EXPECT_EQ(d->program->warmup_runs, 0);
  EXPECT_EQ(d->program->best_of, 1);
  EXPECT_DOUBLE_EQ(d->program->timeout_s, 300);
  EXPECT_EQ(d->program->trace_flag, "--trace");
  EXPECT_TRUE(d->program->background.empty() && d->program->foreground.empty());
}

TEST(GateSpec, ProgramErrorsNameThePositionAndWhatWasExpected) {
  const std::string command = "command = [\"/bin/sh\", \"{spec_dir}/bench.sh\", \"--model\", \"{model}\"]\n";
  std::string m = program_error(command, "");
  EXPECT_NE(m.find("spec.toml:4:1: [workload.program]: missing 'command', a non-empty array of strings (argv; no "
                   "shell)"),
            std::string::npos)
      << m;
  m = program_error(command, "command = []\n");
  EXPECT_NE(m.find("spec.toml:4:1: [workload.program]: missing 'command'"), std::string::npos) << m;
  m = program_error(command, "command = \"/bin/sh bench.sh\"\n");
  EXPECT_NE(m.find("spec.toml:5:11: [workload.program] command: expected an array of strings, got a string"),
            std::string::npos)
      << m;
  // {model} with neither model = ... nor a synthetic table.
  std::string no_model = edit_text(kProgram, "model = \"synthetic\"\n", "");
  no_model = edit_text(no_model, "[workload.program.synthetic]\narch = \"hybrid\"\ndim = 64\nexperts = 4\n"
                                 "experts_used = 2\nshared_expert = true\n", "");
  m = error_of(no_model);
  EXPECT_NE(m.find("spec.toml:5:11: [workload.program] command: uses {model}, but the table names no model = ..."),
            std::string::npos)
      << m;
  m = program_error("best_of = 3", "best_off = 3");
  EXPECT_NE(m.find("spec.toml:8:12: [workload.program]: unknown key 'best_off'; expected one of: best_of, command, model, runs, synthetic, timeline, "
                   "timeout_s, warmup_runs"),
            std::string::npos)
      << m;
  m = program_error("trace_flag = \"--trace-out\"", "trace_flags = \"--trace-out\"");
  EXPECT_NE(m.find("spec.toml:20:15: [workload.program.timeline]: unknown key 'trace_flags'; expected one of: "
                   "background, foreground, trace_flag"),
            std::string::npos)
      << m;
  m = program_error("foreground = 'name~^moe\\.(dispatch|combine)$'\n", "");
  EXPECT_NE(m.find("spec.toml:19:1: [workload.program.timeline] background: give both background and foreground"),
            std::string::npos)
      << m;
  m = program_error("background = \"name=kv_transfer.send\"\n", "");
  EXPECT_NE(m.find("give both background and foreground"), std::string::npos) << m;
  m = program_error("background = \"name=kv_transfer.send\"", "background = \"nam=kv_transfer.send\"");
  EXPECT_NE(m.find("spec.toml:21:14: [workload.program.timeline] background: selector 'nam=kv_transfer.send': "
                   "column 1: unknown key 'nam'"),
            std::string::npos)
      << m;
  m = program_error("timeout_s = 7.5", "timeout_s = 0");
  EXPECT_NE(m.find("spec.toml:9:13: [workload.program] timeout_s: expected a number in [0.1, 86400]"),
            std::string::npos)
      << m;
}

TEST(GateSpec, ProgramWorkloadsGiveThroughputMetricsOnly) {
  std::string m = program_error("runs = 4", "runs = 2");
  EXPECT_NE(m.find("spec.toml:6:8: [workload.program] runs = 2: prefill_ratio(cand vs base) needs at least 3 runs "
                   "for a confidence interval"),
            std::string::npos)
      << m;
  m = error_of(edit("runs = 3", "runs = 2"));  // the engine's, likewise
  EXPECT_NE(m.find("spec.toml:18:8: [workload.engine] runs = 2: decode_tok_s(tp2) needs at least 3 runs"),
            std::string::npos)
      << m;
  m = program_error("\"prefill_ratio(cand vs base) >= 0.95\"", "\"tokens_equal(cand vs base)\"");
  EXPECT_NE(m.find("spec.toml:2:16: condition 1: tokens_equal measures the engine, but the spec has no "
                   "[workload.engine] table (a program workload gives throughput metrics only)"),
            std::string::npos)
      << m;
  m = program_error("\"prefill_ratio(cand vs base) >= 0.95\"", "\"logits_max_rel_err(cand vs base) <= 1e-4\"");
  EXPECT_NE(m.find("logits_max_rel_err measures the engine, but the spec has no [workload.engine] table (a program "
                   "workload gives throughput metrics only)"),
            std::string::npos)
      << m;
  m = program_error("\"prefill_tok_s(cand) > 0\"", "'zone_time_us(cand, \"step\") > 0'");
  EXPECT_NE(m.find("spec.toml:2:55: condition 2: zone_time_us measures the engine, but the spec has no "
                   "[workload.engine] table (a program workload gives throughput metrics only)"),
            std::string::npos)
      << m;
  // With an engine workload as well, a throughput metric could mean either.
  m = program_error("[arms.base]", "[workload.engine]\nmodel = \"default\"\n\n[arms.base]");
  EXPECT_NE(m.find("spec.toml:2:16: condition 1: prefill_ratio is ambiguous: the spec has both [workload.engine] and "
                   "[workload.program]; keep one of them"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace recur::gate
