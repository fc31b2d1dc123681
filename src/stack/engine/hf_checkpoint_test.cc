// Hugging Face checkpoints (hf_checkpoint.h): every row of hf_config.h's table, written as a
// random-weight GGUF file in llama.cpp's layout (synthetic.h) and as a Hugging Face directory of
// the same weights (hf_export.h: the converter's inverse), loads both ways to the same logits and
// greedy tokens, and tokenizes alike; sharded checkpoints; bad directories give errors that name
// the file, the key or tensor, and what was expected.
#include "engine/hf_checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "engine/architectures.h"
#include "engine/hf_export.h"
#include "engine/hf_tensor_names.h"
#include "engine/hf_tokenizer.h"
#include "engine/mla_test_models.h"
#include "engine/safetensors.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "engine/tokenizer_bpe.h"
#include "engine/transformer.h"

namespace recur {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / fmt::format("recur_hf_{}_{}", ::getpid(), counter_++);
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  fs::path operator/(const std::string& s) const { return path_ / s; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

struct Row {
  const char* label;
  ModelConfig config;
  bool llama3_rope = false;
  std::optional<HfTextPrefix> multimodal;  // Gemma3ForConditionalGeneration's form, text model under this prefix
};

ModelConfig dense(Arch arch) {
  ModelConfig c = testing::tiny_llama_config();
  c.arch = arch;
  architecture(arch).features(c);
  c.n_layers = 2;
  c.ffn_dim = 64;
  if (arch == Arch::kQwen2Moe || arch == Arch::kQwen3Moe) {
    c.n_experts = 4;
    c.n_experts_used = 2;
    if (c.shared_expert) c.shared_ffn_dim = 96;
  }
  return c;
}

// DeepSeek-V2-Lite-like (mla_test_models.h's shape A): direct q, softmax gating, one leading
// dense layer, a shared expert.
ModelConfig deepseek_v2() { return testing::deepseek2_shape_a(); }

// DeepSeek-V3-like: q_lora, sigmoid gating with the selection bias, renormalized and scaled
// top-k, two shared experts, YaRN.
ModelConfig deepseek_v3() {
  ModelConfig c = deepseek_v2();
  c.q_lora_rank = 64;
  c.qk_rope_dim = 8;
  c.head_dim = 40;
  c.n_experts = 8;
  c.n_experts_used = 3;
  c.shared_ffn_dim = 64;
  c.expert_gating = ExpertGating::kSigmoid;
  c.moe_renormalize = true;
  c.expert_weights_scale = 2.5f;
  c.rope_yarn_factor = 4;
  c.rope_original_context = 16;
  c.rope_yarn_log_mul = 0.0707f;
  return c;
}

ModelConfig kimi_linear() { return testing::kimi_linear_config(); }

// Gemma 3 text: 7 layers, so the global layer 5 sits between sliding ones; a window of 5 that the
// 18 steps run past; the global layers' linear RoPE scaling and a final soft-cap, each of which
// config.json carries (rope_scaling, final_logit_softcapping).
ModelConfig gemma3(int window) {
  ModelConfig c = dense(Arch::kGemma3);
  c.n_layers = 7;
  c.sliding_window = window;
  c.rope_local_theta = window > 0 ? 10000.0f : 0.0f;
  c.rope_freq_scale = 0.125f;
  c.final_softcap = window > 0 ? 30.0f : 0.0f;
  return c;
}

// Qwen3-Next (test_models.h): DeltaNet 4 value heads on 2 key heads (in_proj_qkvz's regrouping
// and in_proj_ba's gather both matter), interval 4; and an interval-2 shape with one key head.
ModelConfig qwen3next_a() { return testing::tiny_qwen3next_config(); }
ModelConfig qwen3next_b() { return testing::tiny_qwen3next_interval2_config(); }

void PrintTo(const Row& r, std::ostream* os) { *os << r.label; }

std::vector<Row> rows() {
  return {{"llama", dense(Arch::kLlama)},
          {"llama3_rope", dense(Arch::kLlama), true},
          {"qwen2", dense(Arch::kQwen2)},
          {"qwen3", dense(Arch::kQwen3)},
          {"qwen2moe", dense(Arch::kQwen2Moe)},
          {"qwen3moe", dense(Arch::kQwen3Moe)},
          {"phi3", dense(Arch::kPhi3)},
          {"gemma2", dense(Arch::kGemma2)},
          {"gemma3", gemma3(5)},
          {"gemma3_global", gemma3(0)},
          {"gemma3_multimodal", gemma3(5), false, HfTextPrefix::kModelLanguageModel},
          {"gemma3_multimodal_legacy", gemma3(5), false, HfTextPrefix::kLanguageModelModel},
          {"deepseek_v2", deepseek_v2()},
          {"deepseek_v3", deepseek_v3()},
          {"kimi_linear", kimi_linear()},
          {"qwen3next", qwen3next_a()},
          {"qwen3next_interval2", qwen3next_b()}};
}

struct Gguf {
  std::vector<std::byte> bytes;
  std::unique_ptr<Model> model;
  const gguf::File& file() const { return static_cast<const TransformerModel&>(*model).file(); }
};

Gguf gguf_model(const Row& r, gguf::TensorType dtype) {
  Gguf g;
  auto w = synthetic_model({.config = r.config, .dtype = dtype, .seed = 11, .llama3_rope = r.llama3_rope});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  if (!w) return g;
  g.bytes = w->serialize();
  auto f = gguf::parse(g.bytes, fmt::format("{}.gguf", r.label));
  EXPECT_TRUE(f.has_value());
  auto m = model_from_file(std::move(*f));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  if (m) g.model = std::move(*m);
  return g;
}

Config f32_knobs() {
  Config k;
  EXPECT_TRUE(k.set("kernel.gemm.f16_activations", "f32").has_value());
  return k;
}

double worst_rel(std::span<const float> got, std::span<const float> want) {
  double err = 0, scale = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - double(want[i])));
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return err / scale;
}

int argmax(std::span<const float> x) { return int(std::max_element(x.begin(), x.end()) - x.begin()); }

// Teacher-forced logits, then greedy decoding with each model feeding back its own choice.
void expect_same_outputs(const Model& a, const Model& b, const std::string& what) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto sa = a.new_session(**pool, 40, f32_knobs());
  auto sb = b.new_session(**pool, 40, f32_knobs());
  ASSERT_TRUE(sa.has_value() && sb.has_value()) << what;
  int ta = 1, tb = 1;
  const std::vector<int> forced = {1, 200, 33, 399, 7, 150, 64, 2};
  for (size_t i = 0; i < forced.size() + 10; ++i) {
    if (i < forced.size()) ta = tb = forced[i];
    auto la = (*sa)->step(ta);
    ASSERT_TRUE(la.has_value()) << la.error().message();
    std::vector<float> keep(la->begin(), la->end());
    auto lb = (*sb)->step(tb);
    ASSERT_TRUE(lb.has_value()) << lb.error().message();
    // Identical weights and kernels: only Gemma's (w - 1) + 1, Kimi's log / exp and DeepSeek's
    // YaRN multiplier through config.json round at all.
    EXPECT_LT(worst_rel(*lb, keep), 1e-5) << what << " step " << i;
    ta = argmax(keep);
    tb = argmax(*lb);
    ASSERT_EQ(ta, tb) << what << " greedy step " << i;
  }
}

class HfRows : public ::testing::TestWithParam<Row> {};

TEST_P(HfRows, LoadsTheSameWeightsAsTheGgufFile) {
  const Row& r = GetParam();
  for (auto [dtype, shards] : {std::pair{gguf::TensorType::kF32, 1}, std::pair{gguf::TensorType::kBF16, 3},
                               std::pair{gguf::TensorType::kF16, 2}}) {
    const std::string what = fmt::format("{} {} {} shard(s)", r.label, gguf::tensor_type_name(uint32_t(dtype)), shards);
    SCOPED_TRACE(what);
    Gguf g = gguf_model(r, dtype);
    ASSERT_TRUE(g.model);
    TempDir dir;
    auto exported = export_hf_checkpoint(g.file(), dir.str(), {.shards = shards, .multimodal = r.multimodal});
    ASSERT_TRUE(exported.has_value()) << exported.error().message();
    EXPECT_EQ(fs::exists(dir / "model.safetensors.index.json"), shards > 1);
    auto hf = load_model(dir.str(), Config());
    ASSERT_TRUE(hf.has_value()) << hf.error().message();
    EXPECT_EQ((*hf)->config().arch, r.config.arch);
    expect_same_outputs(*g.model, **hf, what);
    for (const char* text : {"hello world", "the quick brown fox, 42 times!", "  spaces  and\nnewlines", "ünïcödé ✓"})
      EXPECT_EQ((*hf)->tokenizer().encode(text, true), g.model->tokenizer().encode(text, true)) << text;
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, HfRows, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& i) { return std::string(i.param.label); });

TEST(HfCheckpoint, BindsTensorsInPlaceAndCopiesOnlyConversions) {
  Gguf g = gguf_model({"llama", dense(Arch::kLlama)}, gguf::TensorType::kBF16);
  ASSERT_TRUE(g.model);
  TempDir dir;
  ASSERT_TRUE(export_hf_checkpoint(g.file(), dir.str()).has_value());
  auto ck = read_hf_checkpoint(dir.str());
  ASSERT_TRUE(ck.has_value()) << ck.error().message();
  auto shard = safetensors::read((dir / "model.safetensors").string());
  ASSERT_TRUE(shard.has_value());
  const gguf::TensorInfo* v = ck->file.tensor("blk.0.attn_v.weight");
  const gguf::TensorInfo* q = ck->file.tensor("blk.0.attn_q.weight");
  ASSERT_NE(v, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(v->type, gguf::TensorType::kBF16) << "BF16 kept as stored";
  EXPECT_EQ(v->dims, (std::vector<uint64_t>{64, 32}));
  // A fresh mapping of the same file holds the same bytes; q was permuted, so it differs.
  const safetensors::Tensor* hv = shard->find("model.layers.0.self_attn.v_proj.weight");
  const safetensors::Tensor* hq = shard->find("model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(std::memcmp(v->data, hv->data, v->bytes), 0);
  EXPECT_NE(std::memcmp(q->data, hq->data, q->bytes), 0);
  EXPECT_EQ(ck->origin["blk.0.attn_v.weight"], "'model.layers.0.self_attn.v_proj.weight' [32, 64] in 'model.safetensors'");
}

// Classes that share a row: Mistral is Llama, DeepSeek-V3 is DeepSeek-V2 (the exporter writes
// the first name of each row).
TEST(HfCheckpoint, ClassesOfTheSameRowLoadAlike) {
  for (auto [row, name] : {std::pair{Row{"llama", dense(Arch::kLlama)}, "MistralForCausalLM"},
                           std::pair{Row{"deepseek_v3", deepseek_v3()}, "DeepseekV3ForCausalLM"}}) {
    Gguf g = gguf_model(row, gguf::TensorType::kF32);
    ASSERT_TRUE(g.model);
    TempDir dir;
    ASSERT_TRUE(export_hf_checkpoint(g.file(), dir.str()).has_value());
    std::ifstream in(dir / "config.json");
    json config = json::parse(in);
    config["architectures"] = {name};
    config["sliding_window"] = 4096;  // Mistral's; llama.cpp ignores it, as recur does
    std::ofstream(dir / "config.json") << config.dump();
    auto hf = load_model(dir.str(), Config());
    ASSERT_TRUE(hf.has_value()) << hf.error().message();
    expect_same_outputs(*g.model, **hf, name);
  }
}

TEST(HfCheckpoint, SharedBytesLoadingRefusesADirectoryByName) {
  Gguf g = gguf_model({"qwen2", dense(Arch::kQwen2)}, gguf::TensorType::kF32);
  ASSERT_TRUE(g.model);
  TempDir dir;
  ASSERT_TRUE(export_hf_checkpoint(g.file(), dir.str()).has_value());
  auto bytes = read_model_bytes(dir.str(), Config());
  ASSERT_FALSE(bytes.has_value());
  EXPECT_NE(bytes.error().message().find("a Hugging Face checkpoint directory"), std::string::npos) << bytes.error().message();
  auto file = read_model_file(dir.str());
  ASSERT_TRUE(file.has_value()) << file.error().message();
  EXPECT_EQ(*file->get_string("general.architecture"), "qwen2");
}

TEST(HfTensorNames, FollowLlamaCppsConverter) {
  // convert_hf_to_gguf.py's permute: reshape(heads, 2, d / 2, ...).swapaxes(1, 2), so a head of
  // 4 rows [r0, r1, r2, r3] becomes [r0, r2, r1, r3].
  EXPECT_EQ(llama_permuted_row(0, 4, false), 0);
  EXPECT_EQ(llama_permuted_row(1, 4, false), 2);
  EXPECT_EQ(llama_permuted_row(2, 4, false), 1);
  EXPECT_EQ(llama_permuted_row(7, 4, false), 7);
  EXPECT_EQ(llama_permuted_row(5, 4, false), 6);
  for (int64_t r = 0; r < 64; ++r) EXPECT_EQ(llama_permuted_row(llama_permuted_row(r, 16, false), 16, true), r);
  auto row = [](const char* name) { return *find_hf_architecture(name, "test"); };
  bool ignored = false;
  auto target = [&](const char* arch, const char* name) {
    auto t = hf_tensor_target(*row(arch), name, 4, &ignored);
    return t ? fmt::format("{} {}", t->gguf_name, int(t->conversion)) : std::string(ignored ? "ignored" : "unknown");
  };
  EXPECT_EQ(target("LlamaForCausalLM", "model.layers.3.self_attn.q_proj.weight"), "blk.3.attn_q.weight 1");
  EXPECT_EQ(target("Qwen2ForCausalLM", "model.layers.3.self_attn.q_proj.weight"), "blk.3.attn_q.weight 0");
  EXPECT_EQ(target("Gemma2ForCausalLM", "model.layers.0.post_attention_layernorm.weight"), "blk.0.post_attention_norm.weight 3");
  EXPECT_EQ(target("Gemma2ForCausalLM", "model.norm.weight"), "output_norm.weight 3");
  EXPECT_EQ(target("LlamaForCausalLM", "model.layers.0.post_attention_layernorm.weight"), "blk.0.ffn_norm.weight 0");
  EXPECT_EQ(target("Phi3ForCausalLM", "model.layers.1.mlp.gate_up_proj.weight"), "blk.1.ffn_up.weight 0");
  EXPECT_EQ(target("KimiLinearForCausalLM", "model.layers.2.block_sparse_moe.experts.7.w2.weight"), "blk.2.ffn_down_exps.weight 7");
  EXPECT_EQ(target("KimiLinearForCausalLM", "model.layers.2.self_attn.A_log"), "blk.2.ssm_a 4");
  EXPECT_EQ(target("DeepseekV3ForCausalLM", "model.layers.1.mlp.gate.e_score_correction_bias"), "blk.1.exp_probs_b.bias 0");
  EXPECT_EQ(target("DeepseekV3ForCausalLM", "model.layers.4.self_attn.q_a_proj.weight"), "ignored")
      << "layers past num_hidden_layers (V3's multi-token prediction) are dropped";
  EXPECT_EQ(target("LlamaForCausalLM", "model.layers.0.self_attn.rotary_emb.inv_freq"), "ignored");
  EXPECT_EQ(target("LlamaForCausalLM", "model.layers.0.mlp.experts.x.w1.weight"), "unknown");
  EXPECT_EQ(hf_tensor_name(*row("Qwen2MoeForCausalLM"), "blk.1.ffn_gate_inp_shexp.weight"), "model.layers.1.mlp.shared_expert_gate.weight");
  EXPECT_EQ(hf_tensor_name(*row("DeepseekV2ForCausalLM"), "blk.1.ffn_up_shexp.weight"), "model.layers.1.mlp.shared_experts.up_proj.weight");
  EXPECT_EQ(hf_tensor_name(*row("KimiLinearForCausalLM"), "blk.1.ffn_gate_exps.weight", 3),
            "model.layers.1.block_sparse_moe.experts.3.w1.weight");
  // Gemma 3 and Qwen3-Next add 1 to every RMSNorm weight the converter's "norm.weight" rule
  // reaches, QK norms included; Qwen3 does not, and Qwen3-Next's gated DeltaNet norm is the exception.
  EXPECT_EQ(target("Gemma3ForCausalLM", "model.layers.1.self_attn.q_norm.weight"), "blk.1.attn_q_norm.weight 3");
  EXPECT_EQ(target("Gemma3ForCausalLM", "model.layers.1.pre_feedforward_layernorm.weight"), "blk.1.ffn_norm.weight 3");
  EXPECT_EQ(target("Qwen3ForCausalLM", "model.layers.1.self_attn.k_norm.weight"), "blk.1.attn_k_norm.weight 0");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.1.self_attn.k_norm.weight"), "blk.1.attn_k_norm.weight 3");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.1.post_attention_layernorm.weight"),
            "blk.1.post_attention_norm.weight 3");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.1.linear_attn.norm.weight"), "blk.1.ssm_norm.weight 0");
  // in_proj_qkvz splits into attn_qkv + attn_gate, conv1d is squeezed, A_log becomes -exp(A_log),
  // dt_bias is ssm_dt.bias, in_proj_ba stays whole; the multi-token-prediction head is dropped.
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.0.linear_attn.in_proj_qkvz.weight"), "blk.0.attn_qkv.weight 9");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.0.linear_attn.conv1d.weight"), "blk.0.ssm_conv1d.weight 8");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.0.linear_attn.A_log"), "blk.0.ssm_a 4");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.0.linear_attn.dt_bias"), "blk.0.ssm_dt.bias 0");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.0.linear_attn.in_proj_ba.weight"), "blk.0.ssm_ba.weight 0");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "mtp.layers.0.self_attn.q_proj.weight"), "ignored");
  EXPECT_EQ(target("Qwen3NextForCausalLM", "model.layers.2.mlp.shared_expert_gate.weight"), "blk.2.ffn_gate_inp_shexp.weight 0");
  // Gemma3ForConditionalGeneration: the text model under either prefix, the vision tower and
  // projector skipped (under model. too, as transformers >= 4.52 saves them), nothing unprefixed.
  for (const char* name : {"model.language_model.layers.1.self_attn.q_norm.weight", "language_model.model.layers.1.self_attn.q_norm.weight"})
    EXPECT_EQ(target("Gemma3ForConditionalGeneration", name), "blk.1.attn_q_norm.weight 3") << name;
  EXPECT_EQ(target("Gemma3ForConditionalGeneration", "language_model.lm_head.weight"), "output.weight 0");
  EXPECT_EQ(target("Gemma3ForConditionalGeneration", "lm_head.weight"), "output.weight 0");
  EXPECT_EQ(target("Gemma3ForConditionalGeneration", "model.language_model.embed_tokens.weight"), "token_embd.weight 0");
  for (const char* name : {"vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", "multi_modal_projector.mm_soft_emb_norm.weight",
                           "model.vision_tower.vision_model.post_layernorm.bias", "model.multi_modal_projector.mm_input_projection_weight"})
    EXPECT_EQ(target("Gemma3ForConditionalGeneration", name), "ignored") << name;
  EXPECT_EQ(target("Gemma3ForConditionalGeneration", "model.layers.1.self_attn.q_norm.weight"), "unknown");
  EXPECT_EQ(target("Gemma3ForCausalLM", "vision_tower.vision_model.post_layernorm.bias"), "unknown");
  EXPECT_EQ(hf_tensor_name(*row("Gemma3ForConditionalGeneration"), "blk.0.attn_q.weight"),
            "model.language_model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(hf_multimodal_name("lm_head.weight", HfTextPrefix::kLanguageModelModel), "language_model.lm_head.weight");
  EXPECT_EQ(hf_multimodal_name("model.norm.weight", HfTextPrefix::kLanguageModelModel), "language_model.model.norm.weight");
  // Each row writes its own spelling of the GGUF names several rows share.
  EXPECT_EQ(hf_tensor_name(*row("Qwen3NextForCausalLM"), "blk.0.ssm_a"), "model.layers.0.linear_attn.A_log");
  EXPECT_EQ(hf_tensor_name(*row("KimiLinearForCausalLM"), "blk.0.ssm_a"), "model.layers.0.self_attn.A_log");
  EXPECT_EQ(hf_tensor_name(*row("Qwen3NextForCausalLM"), "blk.0.attn_qkv.weight"), "model.layers.0.linear_attn.in_proj_qkvz.weight");
  EXPECT_EQ(hf_tensor_name(*row("Phi3ForCausalLM"), "blk.0.attn_qkv.weight"), "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(hf_tensor_name(*row("Qwen3NextForCausalLM"), "blk.0.ssm_norm.weight"), "model.layers.0.linear_attn.norm.weight");
  EXPECT_EQ(hf_tensor_name(*row("Qwen3NextForCausalLM"), "blk.0.ffn_up_shexp.weight"), "model.layers.0.mlp.shared_expert.up_proj.weight");
  // The converter's regrouping of in_proj_qkvz ([q_j | k_j | v_j | z_j] per key head j) for 2 key
  // heads of 2 dims with 2 value heads each: a key head spans 2 + 2 + 4 + 4 = 12 rows.
  const QkvzShape s{2, 2, 2};
  EXPECT_EQ(s.qkv_rows(), 16);
  EXPECT_EQ(s.rows(), 24);
  const std::vector<int64_t> want = {0, 1, 12, 13,                   // q of key heads 0, 1
                                     2, 3, 14, 15,                   // k
                                     4, 5, 6, 7, 16, 17, 18, 19,     // v: each key head's 4 rows
                                     8, 9, 10, 11, 20, 21, 22, 23};  // z (attn_gate)
  for (int64_t r = 0; r < s.rows(); ++r) EXPECT_EQ(qwen3next_qkvz_row(r, s), want[size_t(r)]) << r;
}

// ---- tokenizer.json ----

Vocabulary bpe_vocab(const std::string& pre) {
  Vocabulary v;
  v.model = "gpt2";
  v.pre = pre;
  v.add_space_prefix = false;
  v.add_bos = false;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_to_unicode(uint8_t(b)));
  v.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "\xC4\xA0w o", "r l", "rl d", "\xC4\xA0wo rld", "1 2", "12 3"};
  for (const std::string& m : v.merges) {
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    v.tokens.push_back(joined);
  }
  v.tokens.push_back("<|endoftext|>");
  v.kinds.assign(v.tokens.size(), TokenKind::kNormal);
  v.kinds.back() = TokenKind::kControl;
  v.eos = v.bos = TokenId(v.tokens.size() - 1);
  return v;
}

TEST(HfTokenizer, ByteLevelBpeTokenizesAsTheGgufVocabulary) {
  for (const char* pre : {"gpt-2", "llama-bpe", "qwen2"}) {
    SCOPED_TRACE(pre);
    const Vocabulary want = bpe_vocab(pre);
    auto text = hf_tokenizer_json(want);
    ASSERT_TRUE(text.has_value()) << text.error().message();
    auto got = vocabulary_from_hf_tokenizer({.tokenizer_json = *text, .source = "tokenizer.json",
                                             .vocab_size = int(want.tokens.size()) + 3, .bos = want.bos, .eos = want.eos});
    ASSERT_TRUE(got.has_value()) << got.error().message();
    EXPECT_EQ(got->pre, pre);
    EXPECT_EQ(got->merges, want.merges);
    EXPECT_EQ(got->tokens.back(), fmt::format("[PAD{}]", want.tokens.size() + 2)) << "padded to vocab_size";
    EXPECT_EQ(got->kinds[size_t(want.bos)], TokenKind::kControl);
    auto a = Tokenizer::create(want);
    auto b = Tokenizer::create(*got);
    ASSERT_TRUE(a.has_value() && b.has_value());
    for (const char* s : {"hello world", "hello world 12345 it's", "  x\n\ny"})
      EXPECT_EQ((*b)->encode(s, false), (*a)->encode(s, false)) << s;
  }
}

TEST(HfTokenizer, RefusesWhatItDoesNotImplementByName) {
  auto read = [](const json& tok) {
    const std::string text = tok.dump();
    return vocabulary_from_hf_tokenizer({.tokenizer_json = text, .source = "dir/tokenizer.json", .vocab_size = 300});
  };
  json unigram = {{"model", {{"type", "Unigram"}, {"vocab", json::array()}}}};
  auto u = read(unigram);
  ASSERT_FALSE(u.has_value());
  EXPECT_NE(u.error().message().find("tokenizer model 'Unigram'"), std::string::npos) << u.error().message();
  json split = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}}},
                {"pre_tokenizer",
                 {{"type", "Sequence"},
                  {"pretokenizers",
                   {{{"type", "Split"}, {"pattern", {{"Regex", "\\p{N}{1,3}"}}}}, {{"type", "ByteLevel"}, {"use_regex", false}}}}}}};
  auto s = read(split);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("'\\p{N}{1,3}'"), std::string::npos) << s.error().message();
  json too_big = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 300}}}, {"byte_fallback", true}}}};
  auto t = read(too_big);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("id 300, outside the model's vocab_size 300"), std::string::npos) << t.error().message();
  EXPECT_FALSE(vocabulary_from_hf_tokenizer({.tokenizer_json = "{", .source = "t", .vocab_size = 3}).has_value());
}

TEST(HfTokenizer, ReadsLlama2AndLlama3StyleFiles) {
  // Llama 2 / Mistral: byte_fallback BPE with a prepending Metaspace (newer files) and the
  // <unk>, <s>, </s> specials; the merged tokens rank by merge order.
  json spm = {{"added_tokens", {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                                {{"id", 1}, {"content", "<s>"}, {"special", true}}}},
              {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "first"}}},
              {"model",
               {{"type", "BPE"},
                {"byte_fallback", true},
                {"unk_token", "<unk>"},
                {"vocab", {{"<unk>", 0}, {"<s>", 1}, {"<0x41>", 2}, {"\u2581", 3}, {"a", 4}, {"b", 5}, {"ab", 6}, {"\u2581ab", 7}}},
                {"merges", {"a b", "\u2581 ab"}}}}};
  const std::string text = spm.dump();
  auto v = vocabulary_from_hf_tokenizer({.tokenizer_json = text, .source = "t", .vocab_size = 8, .bos = 1});
  ASSERT_TRUE(v.has_value()) << v.error().message();
  EXPECT_EQ(v->model, "llama");
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_TRUE(v->add_bos);
  EXPECT_EQ(v->unknown, 0);
  EXPECT_EQ(v->kinds[0], TokenKind::kUnknown);
  EXPECT_EQ(v->kinds[1], TokenKind::kControl);
  EXPECT_EQ(v->kinds[2], TokenKind::kByte);
  EXPECT_GT(v->scores[6], v->scores[7]) << "'ab' is merged before '\u2581ab'";
  auto tok = Tokenizer::create(*v);
  ASSERT_TRUE(tok.has_value());
  EXPECT_EQ((*tok)->encode("ab A", true), (std::vector<TokenId>{1, 7, 3, 2}));

  // Llama 3: the Split regex, ignore_merges, and a template that puts <|begin_of_text|> first.
  json bpe = json::object();
  bpe["model"] = {{"type", "BPE"}, {"ignore_merges", true}, {"vocab", {{"a", 0}, {"<|begin_of_text|>", 1}}},
                  {"merges", json::array()}};
  json split = {{"type", "Split"}, {"behavior", "Isolated"}};
  split["pattern"]["Regex"] =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  bpe["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", json::array({split, {{"type", "ByteLevel"}, {"use_regex", false}}})}};
  json single = json::array({{{"SpecialToken", {{"id", "<|begin_of_text|>"}}}}, {{"Sequence", {{"id", "A"}}}}});
  json template_processing = {{"type", "TemplateProcessing"}, {"single", single}};
  bpe["post_processor"] = {{"type", "Sequence"},
                           {"processors", json::array({{{"type", "ByteLevel"}}, template_processing})}};
  const std::string bpe_text = bpe.dump();
  auto b = vocabulary_from_hf_tokenizer({.tokenizer_json = bpe_text, .source = "t", .vocab_size = 2, .bos = 1});
  ASSERT_TRUE(b.has_value()) << b.error().message();
  EXPECT_EQ(b->pre, "llama-bpe");
  EXPECT_TRUE(b->add_bos);
}

// ---- bad directories ----

class BadCheckpoint : public ::testing::Test {
 protected:
  virtual Row row() const { return {"qwen2moe", dense(Arch::kQwen2Moe)}; }
  void SetUp() override {
    g_ = gguf_model(row(), gguf::TensorType::kF32);
    ASSERT_TRUE(g_.model);
    restore();
  }
  // The directory as exported, undoing the last edit.
  void restore() {
    ASSERT_TRUE(export_hf_checkpoint(g_.file(), dir_.str(), {.shards = 2, .multimodal = row().multimodal}).has_value());
  }
  std::string load_error(std::string_view what = "") {
    auto m = load_model(dir_.str(), Config());
    EXPECT_FALSE(m.has_value()) << what;
    return m ? "" : m.error().message();
  }
  // Sets config.json's `key` to `value` (null: removes it).
  void set_config(const std::string& key, const json& value) {
    json c = read_json("config.json");
    if (value.is_null()) c.erase(key);
    else c[key] = value;
    write("config.json", c.dump());
  }
  // Sets text_config's `key` (a multimodal checkpoint's text model keys) to `value` (null: removes it).
  void set_text_config(const std::string& key, const json& value) {
    json c = read_json("config.json");
    if (value.is_null()) c["text_config"].erase(key);
    else c["text_config"][key] = value;
    write("config.json", c.dump());
  }
  // The same, returning the load error.
  std::string config_error(const std::string& key, const json& value) {
    set_config(key, value);
    return load_error(key);
  }
  // Writes tensor `name` with its two dims swapped and returns the load error.
  std::string swapped_shape_error(const std::string& name) {
    rewrite_shard(shard_of(name), [&](std::vector<safetensors::PendingTensor>& ts) {
      for (auto& t : ts)
        if (t.name == name) std::reverse(t.shape.begin(), t.shape.end());
    });
    return load_error(name);
  }
  json read_json(const std::string& name) {
    std::ifstream in(dir_ / name);
    return json::parse(in);
  }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name, std::ios::trunc) << text; }
  // Rewrites shard `name` with `edit` applied to its tensors.
  void rewrite_shard(const std::string& name, const std::function<void(std::vector<safetensors::PendingTensor>&)>& edit) {
    std::vector<safetensors::PendingTensor> tensors;
    {
      auto f = safetensors::read((dir_ / name).string());
      ASSERT_TRUE(f.has_value());
      for (const auto& t : f->tensors)
        tensors.push_back({t.name, t.dtype, t.shape, std::vector<std::byte>(t.data, t.data + (t.end - t.begin))});
    }
    edit(tensors);
    auto bytes = safetensors::serialize(tensors);
    ASSERT_TRUE(bytes.has_value());
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes->data()), std::streamsize(bytes->size()));
  }
  // Removes a tensor from its shard and from the index.
  void drop(const std::string& name) {
    rewrite_shard(shard_of(name), [&](std::vector<safetensors::PendingTensor>& ts) {
      std::erase_if(ts, [&](const safetensors::PendingTensor& t) { return t.name == name; });
    });
    json index = read_json("model.safetensors.index.json");
    index["weight_map"].erase(name);
    write("model.safetensors.index.json", index.dump());
  }
  std::string shard_of(const std::string& tensor) {
    return read_json("model.safetensors.index.json")["weight_map"][tensor].get<std::string>();
  }

  Gguf g_;
  TempDir dir_;
};

TEST_F(BadCheckpoint, MissingConfigKeyIsNamed) {
  json c = read_json("config.json");
  c.erase("hidden_size");
  write("config.json", c.dump());
  const std::string e = load_error();
  EXPECT_NE(e.find("config.json: missing 'hidden_size'"), std::string::npos) << e;
}

TEST_F(BadCheckpoint, UnknownArchitectureListsTheSupportedOnes) {
  json c = read_json("config.json");
  c["architectures"] = {"FalconForCausalLM"};
  write("config.json", c.dump());
  const std::string e = load_error();
  EXPECT_NE(e.find("architecture 'FalconForCausalLM' is not supported"), std::string::npos) << e;
  EXPECT_NE(e.find("Qwen2MoeForCausalLM"), std::string::npos) << e;
  EXPECT_NE(e.find("KimiLinearForCausalLM"), std::string::npos) << e;
}

TEST_F(BadCheckpoint, RefusedConfigValueIsNamed) {
  json c = read_json("config.json");
  c["norm_topk_prob"] = true;
  write("config.json", c.dump());
  const std::string e = load_error();
  EXPECT_NE(e.find("'norm_topk_prob' is true"), std::string::npos) << e;
}

TEST_F(BadCheckpoint, WrongTensorShapeNamesTheTensorTheShardAndTheShape) {
  const std::string name = "model.layers.1.self_attn.v_proj.weight";
  const std::string shard = shard_of(name);
  rewrite_shard(shard, [&](std::vector<safetensors::PendingTensor>& ts) {
    for (auto& t : ts)
      if (t.name == name) t.shape = {t.shape[1], t.shape[0]};  // [32, 64] written as [64, 32]
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("blk.1.attn_v.weight"), std::string::npos) << e;
  EXPECT_NE(e.find(fmt::format("'{}' [64, 32] in '{}'", name, shard)), std::string::npos) << e;
  EXPECT_NE(e.find("expected"), std::string::npos) << e;
}

TEST_F(BadCheckpoint, MissingTensorIsNamedByItsHuggingFaceName) {
  const std::string name = "model.layers.0.self_attn.k_proj.weight";
  drop(name);
  const std::string e = load_error();
  EXPECT_NE(e.find(fmt::format("'{}', which the checkpoint lacks", name)), std::string::npos) << e;
}

TEST_F(BadCheckpoint, MissingExpertIsNamed) {
  const std::string name = "model.layers.1.mlp.experts.2.up_proj.weight";
  drop(name);
  const std::string e = load_error();
  EXPECT_NE(e.find(fmt::format("tensor '{}' is missing", name)), std::string::npos) << e;
}

TEST_F(BadCheckpoint, TruncatedShardIsNamed) {
  const std::string shard = "model-00002-of-00002.safetensors";
  fs::resize_file(dir_ / shard, fs::file_size(dir_ / shard) - 100);
  const std::string e = load_error();
  EXPECT_NE(e.find(shard), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST_F(BadCheckpoint, BadIndexIsRefused) {
  write("model.safetensors.index.json", "{\"weight_map\": {\"lm_head.weight\": \"../elsewhere.safetensors\"}}");
  std::string e = load_error();
  EXPECT_NE(e.find("'../elsewhere.safetensors', not a .safetensors file name in the model directory"), std::string::npos) << e;
  write("model.safetensors.index.json", "{\"weight_map\": {\"lm_head.weight\": \"model-00001-of-00002.safetensors\"}}");
  e = load_error();
  EXPECT_NE(e.find("weight_map puts tensor 'lm_head.weight' in 'model-00001-of-00002.safetensors'"), std::string::npos) << e;
  write("model.safetensors.index.json", "[1, 2");
  e = load_error();
  EXPECT_NE(e.find("model.safetensors.index.json: not a JSON object"), std::string::npos) << e;
  write("model.safetensors.index.json", "{\"weight_map\": {\"x\": \"missing.safetensors\"}}");
  e = load_error();
  EXPECT_NE(e.find("missing.safetensors"), std::string::npos) << e;
}

TEST_F(BadCheckpoint, UnmappedTensorIsNamed) {
  rewrite_shard("model-00001-of-00002.safetensors", [&](std::vector<safetensors::PendingTensor>& ts) {
    ts.push_back({"model.layers.0.mlp.mystery.weight", DType::kF32, {2}, std::vector<std::byte>(8)});
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("tensor 'model.layers.0.mlp.mystery.weight' is not one recur maps for Qwen2MoeForCausalLM"), std::string::npos)
      << e;
}

TEST_F(BadCheckpoint, MissingTokenizerIsNamed) {
  fs::remove(dir_ / "tokenizer.json");
  const std::string e = load_error();
  EXPECT_NE(e.find("tokenizer.json: no such file"), std::string::npos) << e;
}

// The Qwen3-Next row's own tensors and keys.
class BadQwen3Next : public BadCheckpoint {
 protected:
  Row row() const override { return {"qwen3next", qwen3next_a()}; }
};

TEST_F(BadQwen3Next, MissingTensorsAreNamedByTheirHuggingFaceNames) {
  for (const char* name : {"model.layers.0.linear_attn.in_proj_ba.weight", "model.layers.1.linear_attn.in_proj_qkvz.weight",
                           "model.layers.3.self_attn.q_norm.weight", "model.layers.2.mlp.shared_expert_gate.weight"}) {
    drop(name);
    const std::string e = load_error(name);
    EXPECT_NE(e.find(fmt::format("'{}', which the checkpoint lacks", name)), std::string::npos) << e;
    restore();
  }
}

TEST_F(BadQwen3Next, WrongShapesAreNamedWithTheShard) {
  // in_proj_qkvz: 2 key heads x (16 + 16 + 2 x 16 + 2 x 16) rows of 64.
  const std::string qkvz = "model.layers.0.linear_attn.in_proj_qkvz.weight";
  std::string e = swapped_shape_error(qkvz);
  EXPECT_NE(e.find(fmt::format("{}: tensor '{}' has shape [64, 192], expected [192, 64]", shard_of(qkvz), qkvz)),
            std::string::npos)
      << e;
  restore();
  const std::string ba = "model.layers.1.linear_attn.in_proj_ba.weight";  // [2 x 4 value heads, 64]
  e = swapped_shape_error(ba);
  EXPECT_NE(e.find("blk.1.ssm_ba.weight"), std::string::npos) << e;
  EXPECT_NE(e.find(fmt::format("'{}' [64, 8] in '{}'", ba, shard_of(ba))), std::string::npos) << e;
}

TEST_F(BadQwen3Next, BadConfigValuesAreNamed) {
  json types = json::array({"linear_attention", "full_attention", "linear_attention", "full_attention"});
  std::string e = config_error("layer_types", types);
  EXPECT_NE(e.find("layer_types[1] is \"full_attention\", expected 'linear_attention'"), std::string::npos) << e;
  EXPECT_NE(e.find("full_attention_interval 4"), std::string::npos) << e;
  e = config_error("layer_types", json::array({"linear_attention"}));
  EXPECT_NE(e.find("'layer_types' must be a list of 4 entries"), std::string::npos) << e;
  set_config("layer_types", nullptr);
  e = config_error("linear_value_head_dim", 32);
  EXPECT_NE(e.find("'linear_value_head_dim' 32 differs from 'linear_key_head_dim' 16"), std::string::npos) << e;
  set_config("linear_value_head_dim", 16);
  e = config_error("linear_num_value_heads", 3);
  EXPECT_NE(e.find("'linear_num_value_heads' 3 must be a positive multiple of 'linear_num_key_heads' 2"), std::string::npos) << e;
  set_config("linear_num_value_heads", 4);
  e = config_error("linear_key_head_dim", nullptr);
  EXPECT_NE(e.find("config.json: missing 'linear_key_head_dim'"), std::string::npos) << e;
  set_config("linear_key_head_dim", 16);
  e = config_error("partial_rotary_factor", "quarter");
  EXPECT_NE(e.find("'partial_rotary_factor' must be a number, got \"quarter\""), std::string::npos) << e;
  // 0.05 of 16 truncates to 0 dims, which ModelConfig reads as the whole head: refused here.
  for (auto [factor, dims] : {std::pair{0.1, 1}, std::pair{0.05, 0}}) {
    e = config_error("partial_rotary_factor", factor);
    EXPECT_NE(e.find(fmt::format("'partial_rotary_factor' {} rotates {} dims of head_dim 16", factor, dims)), std::string::npos)
        << e;
  }
  set_config("partial_rotary_factor", 0.25);
  e = config_error("norm_topk_prob", false);
  EXPECT_NE(e.find("'norm_topk_prob' is false"), std::string::npos) << e;
}

TEST_F(BadQwen3Next, MultiTokenPredictionTensorsAreDropped) {
  rewrite_shard("model-00001-of-00002.safetensors", [&](std::vector<safetensors::PendingTensor>& ts) {
    ts.push_back({"mtp.fc.weight", DType::kF32, {2, 2}, std::vector<std::byte>(16)});
  });
  auto m = load_model(dir_.str(), Config());
  ASSERT_TRUE(m.has_value()) << m.error().message();
}

// The Gemma 3 row's own tensors and keys.
class BadGemma3 : public BadCheckpoint {
 protected:
  Row row() const override { return {"gemma3", gemma3(5)}; }
};

TEST_F(BadGemma3, MissingAndMisshapedTensorsAreNamed) {
  const std::string q_norm = "model.layers.2.self_attn.q_norm.weight";
  drop(q_norm);
  std::string e = load_error(q_norm);
  EXPECT_NE(e.find(fmt::format("'{}', which the checkpoint lacks", q_norm)), std::string::npos) << e;
  restore();
  const std::string k = "model.layers.5.self_attn.k_proj.weight";  // [2 KV heads x 16, 64]
  e = swapped_shape_error(k);
  EXPECT_NE(e.find("blk.5.attn_k.weight"), std::string::npos) << e;
  EXPECT_NE(e.find(fmt::format("'{}' [64, 32] in '{}'", k, shard_of(k))), std::string::npos) << e;
}

TEST_F(BadGemma3, BadConfigValuesAreNamed) {
  std::string e = config_error("sliding_window_pattern", 4);
  EXPECT_NE(e.find("'sliding_window_pattern' is 4"), std::string::npos) << e;
  set_config("sliding_window_pattern", 6);
  json types = json::array();
  for (int l = 0; l < 7; ++l) types.push_back(l == 3 ? "full_attention" : l == 5 ? "full_attention" : "sliding_attention");
  e = config_error("layer_types", types);
  EXPECT_NE(e.find("layer_types[3] is \"full_attention\", expected 'sliding_attention'"), std::string::npos) << e;
  set_config("layer_types", nullptr);
  e = config_error("query_pre_attn_scalar", 64);
  EXPECT_NE(e.find("'query_pre_attn_scalar' is 64, expected 16"), std::string::npos) << e;
  set_config("query_pre_attn_scalar", 16);
  e = config_error("attn_logit_softcapping", 50.0);
  EXPECT_NE(e.find("'attn_logit_softcapping' is set"), std::string::npos) << e;
  set_config("attn_logit_softcapping", nullptr);
  e = config_error("rope_local_base_freq", 500000.0);
  EXPECT_NE(e.find("'rope_local_base_freq' is 500000"), std::string::npos) << e;
  set_config("rope_local_base_freq", 10000.0);
  e = config_error("sliding_window", "wide");
  EXPECT_NE(e.find("'sliding_window' must be an integer, got \"wide\""), std::string::npos) << e;
}

// The same weights load whether the window is spelled by sliding_window_pattern 1 or by
// layer_types all full_attention; and a window the layer_types agree with loads as written.
TEST(HfCheckpoint, Gemma3LayerTypesAndPatternSpellTheSameModel) {
  for (int window : {0, 5}) {
    Gguf g = gguf_model({"gemma3", gemma3(window)}, gguf::TensorType::kF32);
    ASSERT_TRUE(g.model);
    TempDir dir;
    ASSERT_TRUE(export_hf_checkpoint(g.file(), dir.str()).has_value());
    std::ifstream in(dir / "config.json");
    json config = json::parse(in);
    if (window == 0) {
      EXPECT_EQ(config["sliding_window_pattern"], 1);
      config.erase("sliding_window_pattern");  // layer_types (all full_attention) alone says it
    } else {
      config.erase("layer_types");  // sliding_window_pattern 6 alone says it
    }
    std::ofstream(dir / "config.json") << config.dump();
    auto hf = load_model(dir.str(), Config());
    ASSERT_TRUE(hf.has_value()) << hf.error().message();
    EXPECT_EQ((*hf)->config().sliding_window, window);
    expect_same_outputs(*g.model, **hf, fmt::format("gemma3 window {}", window));
  }
}

// ---- Gemma 3 as released (Gemma3ForConditionalGeneration) ----

// The released gemma-3-4b-it config.json: text_config lists only what differs from
// Gemma3TextConfig's defaults, the model's eos ids stand beside it.
json gemma3_4b_config() {
  return json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
    "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144, "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304, "model_type": "siglip_vision_model",
                      "num_attention_heads": 16, "num_hidden_layers": 27, "patch_size": 14, "vision_use_head": false}})");
}

void expect_gemma3_4b(const HfModelConfig& hf) {
  const ModelConfig& c = hf.config;
  EXPECT_EQ(hf.row->name, "Gemma3ForConditionalGeneration");
  EXPECT_EQ(c.arch, Arch::kGemma3);
  EXPECT_EQ(c.dim, 2560);
  EXPECT_EQ(c.ffn_dim, 10240);
  EXPECT_EQ(c.n_layers, 34);
  EXPECT_EQ(c.n_heads, 8) << "Gemma3TextConfig's default";
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.vocab, 262208);
  EXPECT_EQ(c.context, 131072);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.rope_theta, 1e6f);
  EXPECT_FLOAT_EQ(c.rope_freq_scale, 0.125f);
  EXPECT_FLOAT_EQ(c.rope_local_theta, 10000.0f);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_EQ(c.sliding_window_pattern, 6);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.final_softcap, 0.0f);
  EXPECT_EQ(hf.bos, 2);
  EXPECT_EQ(hf.eos, 1) << "the model's eos_token_id [1, 106], first entry";
}

TEST(HfConfig, Gemma3AsReleasedTakesTheTextConfigsDefaults) {
  auto hf = read_hf_config(gemma3_4b_config().dump(), "gemma-3-4b-it/config.json");
  ASSERT_TRUE(hf.has_value()) << hf.error().message();
  expect_gemma3_4b(*hf);
}

// transformers 5 saves the same model with rope_parameters keyed by layer type.
TEST(HfConfig, Gemma3RopeParametersPerLayerType) {
  json config = gemma3_4b_config();
  json& text = config["text_config"];
  text.erase("rope_scaling");
  text["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
                             {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  auto hf = read_hf_config(config.dump(), "config.json");
  ASSERT_TRUE(hf.has_value()) << hf.error().message();
  expect_gemma3_4b(*hf);
  // Old keys beside the new ones load where they agree (a transformers 4 file re-saved by 5).
  text["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8}};
  text["rope_theta"] = 1000000;
  text["rope_local_base_freq"] = 10000;
  hf = read_hf_config(config.dump(), "config.json");
  ASSERT_TRUE(hf.has_value()) << hf.error().message();
  expect_gemma3_4b(*hf);
}

TEST(HfConfig, LlamaRopeParametersReadAsRopeThetaAndRopeScaling) {
  json config = {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                 {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"intermediate_size", 128}, {"vocab_size", 400}};
  const json llama3 = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  json old = config;
  old["rope_theta"] = 500000.0;
  old["rope_scaling"] = llama3;
  json v5 = config;
  v5["rope_parameters"] = llama3;
  v5["rope_parameters"]["rope_theta"] = 500000.0;
  auto a = read_hf_config(old.dump(), "old/config.json");
  auto b = read_hf_config(v5.dump(), "v5/config.json");
  ASSERT_TRUE(a.has_value()) << a.error().message();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  EXPECT_FLOAT_EQ(b->config.rope_theta, 500000.0f);
  EXPECT_EQ(b->rope_freqs, a->rope_freqs);
  EXPECT_EQ(b->rope_freqs, llama3_rope_divisors(16, 500000.0, {}));
  // The per-layer-type form with one entry is the same RoPE.
  json typed = config;
  typed["rope_parameters"] = {{"full_attention", v5["rope_parameters"]}};
  auto c = read_hf_config(typed.dump(), "typed/config.json");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->rope_freqs, a->rope_freqs);
}

std::string hf_config_error(const json& config) {
  auto hf = read_hf_config(config.dump(), "dir/config.json");
  EXPECT_FALSE(hf.has_value()) << config.dump();
  return hf ? "" : hf.error().message();
}

TEST(HfConfig, ConflictingOrMalformedRopeFieldsAreNamed) {
  json base = {{"architectures", {"Qwen2ForCausalLM"}}, {"hidden_size", 64}, {"num_hidden_layers", 2},
               {"num_attention_heads", 4}, {"intermediate_size", 128}, {"vocab_size", 400}};
  json c = base;
  c["rope_theta"] = 10000.0;
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  std::string e = hf_config_error(c);
  EXPECT_NE(e.find("dir/config.json: 'rope_theta' 10000 conflicts with 'rope_parameters.rope_theta' 500000"), std::string::npos) << e;
  c = base;
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  c["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 4.0}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("'rope_scaling.factor' 2.0 conflicts with 'rope_parameters.factor' 4.0"), std::string::npos) << e;
  c["rope_parameters"] = {{"rope_type", "default"}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("'rope_scaling' type 'linear' conflicts with 'rope_parameters' type 'default'"), std::string::npos) << e;
  c = base;
  c["rope_parameters"] = "linear";
  e = hf_config_error(c);
  EXPECT_NE(e.find("'rope_parameters' must be an object"), std::string::npos) << e;
  c["rope_parameters"] = {{"rope_type", "linear"}, {"factor", "eight"}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("'rope_parameters.factor' must be a number, got \"eight\""), std::string::npos) << e;
  c["rope_parameters"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("rope_parameters type 'yarn' (recur reads linear for qwen2)"), std::string::npos) << e;
  c["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", "big"}}}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("'rope_parameters.full_attention.rope_theta' must be a number, got \"big\""), std::string::npos) << e;
  // A row that rotates every layer alike refuses per-layer-type entries that differ.
  c["rope_parameters"] = {{"full_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 5.0}}}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("'rope_parameters.sliding_attention' differs from 'rope_parameters.full_attention'"), std::string::npos) << e;
  // partial_rotary_factor moved into rope_parameters too.
  c = base;
  c["architectures"] = {"Phi3ForCausalLM"};
  c["rope_parameters"] = {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}};
  e = hf_config_error(c);
  EXPECT_NE(e.find("'partial_rotary_factor' 0.5 (partial rotary is not supported)"), std::string::npos) << e;
  c["partial_rotary_factor"] = 1.0;
  e = hf_config_error(c);
  EXPECT_NE(e.find("'partial_rotary_factor' 1 conflicts with 'rope_parameters.partial_rotary_factor' 0.5"), std::string::npos) << e;
  // Gemma 3: the sliding layers' base, either spelling, and unscaled.
  json g = gemma3_4b_config();
  g["text_config"]["rope_local_base_freq"] = 10000.0;
  g["text_config"]["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}}},
                                         {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 20000.0}}}};
  g["text_config"].erase("rope_scaling");
  e = hf_config_error(g);
  EXPECT_NE(e.find("dir/config.json (text_config): 'rope_local_base_freq' 10000 conflicts with "
                   "'rope_parameters.sliding_attention.rope_theta' 20000"),
            std::string::npos)
      << e;
  g["text_config"].erase("rope_local_base_freq");
  e = hf_config_error(g);
  EXPECT_NE(e.find("'rope_parameters.sliding_attention.rope_theta' is 20000 (llama.cpp's gemma3 rotates the sliding layers at "
                   "base 10000)"),
            std::string::npos)
      << e;
  g["text_config"]["rope_parameters"]["sliding_attention"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  e = hf_config_error(g);
  EXPECT_NE(e.find("rope_parameters.sliding_attention type 'linear' (llama.cpp's gemma3 rotates the sliding layers unscaled)"),
            std::string::npos)
      << e;
}

TEST(HfConfig, Gemma3TextConfigMustBeAnObject) {
  json g = gemma3_4b_config();
  g["text_config"] = json::array({1, 2});
  std::string e = hf_config_error(g);
  EXPECT_NE(e.find("dir/config.json: 'text_config' must be an object holding the text model's settings "
                   "(Gemma3ForConditionalGeneration nests them there), got [1,2]"),
            std::string::npos)
      << e;
  g.erase("text_config");
  e = hf_config_error(g);
  EXPECT_NE(e.find("'text_config' must be an object"), std::string::npos) << e;
  g = gemma3_4b_config();
  g["text_config"]["num_hidden_layers"] = "34";
  e = hf_config_error(g);
  EXPECT_NE(e.find("dir/config.json (text_config): 'num_hidden_layers' must be an integer, got \"34\""), std::string::npos) << e;
}

// rope_theta + rope_scaling (+ Gemma 3's rope_local_base_freq) rewritten as transformers 5 saves
// them: rope_parameters, one object or (Gemma 3) one per layer type.
void to_rope_parameters(json& keys, bool per_layer_type) {
  json full = keys.contains("rope_scaling") ? keys["rope_scaling"] : json{{"rope_type", "default"}};
  if (keys.contains("rope_theta")) full["rope_theta"] = keys["rope_theta"];
  if (per_layer_type) {
    json sliding = {{"rope_type", "default"}, {"rope_theta", keys.value("rope_local_base_freq", 10000.0)}};
    keys["rope_parameters"] = {{"full_attention", full}, {"sliding_attention", sliding}};
  } else {
    keys["rope_parameters"] = full;
  }
  for (const char* old : {"rope_theta", "rope_scaling", "rope_local_base_freq"}) keys.erase(old);
}

TEST(HfCheckpoint, TransformersFiveRopeParametersLoadTheSameModel) {
  for (const Row& r : {Row{"llama3_rope", dense(Arch::kLlama), true}, Row{"deepseek_v3", deepseek_v3()},
                       Row{"gemma3", gemma3(5)}, Row{"gemma3_multimodal", gemma3(5), false, HfTextPrefix::kLanguageModelModel}}) {
    SCOPED_TRACE(r.label);
    Gguf g = gguf_model(r, gguf::TensorType::kF32);
    ASSERT_TRUE(g.model);
    TempDir dir;
    ASSERT_TRUE(export_hf_checkpoint(g.file(), dir.str(), {.multimodal = r.multimodal}).has_value());
    std::ifstream in(dir / "config.json");
    json config = json::parse(in);
    json& keys = r.multimodal ? config["text_config"] : config;
    ASSERT_TRUE(keys.contains("rope_scaling")) << "the row under test scales its RoPE";
    to_rope_parameters(keys, r.config.arch == Arch::kGemma3);
    std::ofstream(dir / "config.json") << config.dump();
    auto hf = load_model(dir.str(), Config());
    ASSERT_TRUE(hf.has_value()) << hf.error().message();
    expect_same_outputs(*g.model, **hf, r.label);
  }
}

TEST(HfCheckpoint, Gemma3MultimodalSkipsTheVisionTensorsAndSaysSo) {
  Gguf g = gguf_model({"gemma3", gemma3(5)}, gguf::TensorType::kF32);
  ASSERT_TRUE(g.model);
  TempDir dir;
  ASSERT_TRUE(export_hf_checkpoint(g.file(), dir.str(), {.multimodal = HfTextPrefix::kModelLanguageModel}).has_value());
  auto shard = safetensors::read((dir / "model.safetensors").string());
  ASSERT_TRUE(shard.has_value());
  EXPECT_NE(shard->find("model.vision_tower.vision_model.embeddings.patch_embedding.weight"), nullptr);
  EXPECT_NE(shard->find("model.language_model.layers.0.self_attn.q_proj.weight"), nullptr);
  auto ck = read_hf_checkpoint(dir.str());
  ASSERT_TRUE(ck.has_value()) << ck.error().message();
  ASSERT_EQ(ck->notes.size(), 1u);
  EXPECT_EQ(ck->notes[0], "Gemma3ForConditionalGeneration: skipped 2 vision tower / projector tensors (recur runs the text model)");
  EXPECT_EQ(ck->origin["blk.0.attn_q.weight"], "'model.language_model.layers.0.self_attn.q_proj.weight' [64, 64] in 'model.safetensors'");
}

// The multimodal row's own bad inputs.
class BadGemma3Multimodal : public BadCheckpoint {
 protected:
  Row row() const override { return {"gemma3_multimodal", gemma3(5), false, HfTextPrefix::kModelLanguageModel}; }
};

TEST_F(BadGemma3Multimodal, MissingTextTensorIsNamedAsTheCheckpointSpellsIt) {
  const std::string q_norm = "model.language_model.layers.2.self_attn.q_norm.weight";
  drop(q_norm);
  std::string e = load_error(q_norm);
  EXPECT_NE(e.find(fmt::format("'{}', which the checkpoint lacks", q_norm)), std::string::npos) << e;
  // transformers 4.50's prefix: named with it.
  for (const auto& entry : fs::directory_iterator(dir_.str())) fs::remove(entry.path());
  ASSERT_TRUE(export_hf_checkpoint(g_.file(), dir_.str(), {.shards = 2, .multimodal = HfTextPrefix::kLanguageModelModel}).has_value());
  const std::string legacy = "language_model.model.layers.2.self_attn.q_norm.weight";
  drop(legacy);
  e = load_error(legacy);
  EXPECT_NE(e.find(fmt::format("'{}', which the checkpoint lacks", legacy)), std::string::npos) << e;
}

TEST_F(BadGemma3Multimodal, TextTensorWithoutItsPrefixIsRefusedByName) {
  rewrite_shard("model-00001-of-00002.safetensors", [&](std::vector<safetensors::PendingTensor>& ts) {
    ts.push_back({"model.layers.0.self_attn.q_proj.weight", DType::kF32, {2}, std::vector<std::byte>(8)});
  });
  const std::string e = load_error();
  EXPECT_NE(e.find("model-00001-of-00002.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' is not one recur maps for "
                   "Gemma3ForConditionalGeneration"),
            std::string::npos)
      << e;
}

TEST_F(BadGemma3Multimodal, BadTextConfigValuesAreNamedWithinTextConfig) {
  set_text_config("rope_parameters", {{"full_attention", {{"rope_type", "linear"}, {"factor", 4.0}}},
                                      {"sliding_attention", {{"rope_type", "default"}}}});
  std::string e = load_error();
  EXPECT_NE(e.find("config.json (text_config): 'rope_scaling.factor' 8.0 conflicts with 'rope_parameters.full_attention.factor' 4.0"),
            std::string::npos)
      << e;
  restore();
  set_text_config("query_pre_attn_scalar", 64);
  e = load_error();
  EXPECT_NE(e.find("config.json (text_config): 'query_pre_attn_scalar' is 64, expected 16"), std::string::npos) << e;
  restore();
  set_config("text_config", "gemma3_text");
  e = load_error();
  EXPECT_NE(e.find("config.json: 'text_config' must be an object"), std::string::npos) << e;
}

}  // namespace
}  // namespace recur
