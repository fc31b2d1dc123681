#include "engine/hf_tensor_names.h"

#include <charconv>

#include <fmt/format.h>

namespace recur {

namespace {

struct HfNamePair {
  std::string_view hf;    // after "model.layers.L." (layer tensors) or the whole name
  std::string_view gguf;  // after "blk.L." or the whole name
  HfConversion conversion = HfConversion::kNone;
};

using HC = HfConversion;
// kNormPlusOne marks the RMSNorm weights; rows without norm_plus_one take them as stored.
constexpr HfNamePair kHfGlobal[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight", HC::kNormPlusOne},
    {"lm_head.weight", "output.weight"},
};

// Gemma 2 / 3's sandwich norms, ahead of kHfLayer (whose post_attention_layernorm is the FFN
// norm); Qwen3-Next has only the first, its FFN norm under llama.cpp's name.
constexpr HfNamePair kHfGemmaLayer[] = {
    {"post_attention_layernorm.weight", "post_attention_norm.weight", HC::kNormPlusOne},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight", HC::kNormPlusOne},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", HC::kNormPlusOne},
};

constexpr HfNamePair kHfLayer[] = {
    {"input_layernorm.weight", "attn_norm.weight", HC::kNormPlusOne},
    {"post_attention_layernorm.weight", "ffn_norm.weight", HC::kNormPlusOne},
    // attention (Llama's q/k permutation is decided by the row: hf_tensor_target)
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    // gated DeltaNet (Qwen3-Next), ahead of the Phi-3 and Kimi names of the same GGUF tensors
    {"linear_attn.in_proj_qkvz.weight", "attn_qkv.weight", HC::kSplitQkvz},
    {"linear_attn.in_proj_ba.weight", "ssm_ba.weight"},
    {"linear_attn.conv1d.weight", "ssm_conv1d.weight", HC::kConvSqueezed},
    {"linear_attn.A_log", "ssm_a", HC::kNegExp},
    {"linear_attn.dt_bias", "ssm_dt.bias"},
    {"linear_attn.norm.weight", "ssm_norm.weight"},  // the gated norm: not zero-centred
    {"linear_attn.out_proj.weight", "ssm_out.weight"},
    {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", HC::kNormPlusOne},  // Gemma 3, Qwen3-Next: 1 + w
    {"self_attn.k_norm.weight", "attn_k_norm.weight", HC::kNormPlusOne},
    // MLA (DeepSeek-V2/V3, Kimi-Linear): kv_b_proj stays whole as attn_kv_b, which the MLA
    // loader splits into W_UK / W_UV (deepseek2.cc) as llama.cpp's converter splits it.
    {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
    {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
    {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
    {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
    {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
    {"self_attn.kv_b_proj.weight", "attn_kv_b.weight"},
    // KDA (Kimi-Linear)
    {"self_attn.q_conv1d.weight", "ssm_conv1d_q.weight", HC::kConv},
    {"self_attn.k_conv1d.weight", "ssm_conv1d_k.weight", HC::kConv},
    {"self_attn.v_conv1d.weight", "ssm_conv1d_v.weight", HC::kConv},
    {"self_attn.f_a_proj.weight", "ssm_f_a.weight"},
    {"self_attn.f_b_proj.weight", "ssm_f_b.weight"},
    {"self_attn.b_proj.weight", "ssm_beta.weight"},
    {"self_attn.A_log", "ssm_a", HC::kNegExp},
    {"self_attn.dt_bias", "ssm_dt.bias", HC::kFlatten},
    {"self_attn.g_a_proj.weight", "ssm_g_a.weight"},
    {"self_attn.g_b_proj.weight", "ssm_g_b.weight"},
    {"self_attn.o_norm.weight", "ssm_norm.weight"},
    // dense FFN (Phi-3: gate_up_proj is ffn_up, gate rows first)
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},
    // router, selection bias, shared experts
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
    {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
    {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
    {"block_sparse_moe.gate.e_score_correction_bias", "exp_probs_b.bias"},
    {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
    {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
    {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
    {"block_sparse_moe.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
    {"block_sparse_moe.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
    {"block_sparse_moe.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
};

// Routed experts: <prefix>E.<part> -> the stacked tensor.
struct HfExpertPart {
  std::string_view prefix, part, gguf;
};
constexpr HfExpertPart kHfExperts[] = {
    {"mlp.experts.", "gate_proj.weight", "ffn_gate_exps.weight"},
    {"mlp.experts.", "up_proj.weight", "ffn_up_exps.weight"},
    {"mlp.experts.", "down_proj.weight", "ffn_down_exps.weight"},
    {"block_sparse_moe.experts.", "w1.weight", "ffn_gate_exps.weight"},
    {"block_sparse_moe.experts.", "w3.weight", "ffn_up_exps.weight"},
    {"block_sparse_moe.experts.", "w2.weight", "ffn_down_exps.weight"},
};

// Kimi-Linear names its MoE block block_sparse_moe; the other rows mlp.
bool hf_block_sparse_moe(const HfArchitecture& row) { return row.arch == Arch::kKimiLinear; }

// Which spelling a row uses where several Hugging Face names map to one GGUF tensor (the
// exporter's direction; reading accepts any of them).
bool hf_row_spells(const HfArchitecture& row, std::string_view hf) {
  if (hf.starts_with("linear_attn.")) return row.arch == Arch::kQwen3Next;
  if (hf.starts_with("block_sparse_moe.")) return hf_block_sparse_moe(row);
  if (hf.starts_with("mlp.gate.") || hf.starts_with("mlp.experts.")) return !hf_block_sparse_moe(row);
  if (hf.starts_with("mlp.shared_experts.")) return row.arch == Arch::kDeepseek2;
  if (hf.starts_with("mlp.shared_expert")) return row.arch == Arch::kQwen2Moe || row.arch == Arch::kQwen3Next;
  if (hf == "mlp.gate_up_proj.weight") return row.arch == Arch::kPhi3;
  if (hf == "mlp.up_proj.weight") return row.arch != Arch::kPhi3;
  return true;
}

std::optional<int> hf_parse_index(std::string_view& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || end == s.data() + s.size() || *end != '.' || v < 0) return std::nullopt;
  s.remove_prefix(size_t(end - s.data()) + 1);
  return v;
}

HfConversion hf_conversion_for(const HfArchitecture& row, const HfNamePair& p) {
  if (p.conversion == HC::kNormPlusOne) return row.tensors.norm_plus_one ? HC::kNormPlusOne : HC::kNone;
  if (row.tensors.permute_qk && p.hf == "self_attn.q_proj.weight") return HC::kPermuteQ;
  if (row.tensors.permute_qk && p.hf == "self_attn.k_proj.weight") return HC::kPermuteK;
  return p.conversion;
}

}  // namespace

int64_t llama_permuted_row(int64_t r, int64_t d, bool inverse) {
  const int64_t head = r / d, within = r % d, half = d / 2;
  if (!inverse) return head * d + (within % 2) * half + within / 2;  // GGUF row (h, i, j) <- HF (h, j, i)
  return head * d + 2 * (within % half) + within / half;
}

int64_t qwen3next_qkvz_row(int64_t r, const QkvzShape& s) {
  const int64_t K = s.head_dim, GV = s.value_heads_per_key * s.head_dim, per = 2 * K + 2 * GV;
  const int64_t qk = s.key_heads * K, v = s.key_heads * GV;
  if (r < qk) return r / K * per + r % K;  // q
  if ((r -= qk) < qk) return r / K * per + K + r % K;  // k
  if ((r -= qk) < v) return r / GV * per + 2 * K + r % GV;  // v
  r -= v;
  return r / GV * per + 2 * K + GV + r % GV;  // z
}

bool hf_vision_tensor(const HfArchitecture& row, std::string_view name) {
  if (!row.tensors.multimodal) return false;
  if (name.starts_with("model.")) name.remove_prefix(std::string_view("model.").size());
  for (std::string_view prefix : {"vision_tower.", "multi_modal_projector.", "multimodal_projector.", "vision_model."})
    if (name.starts_with(prefix)) return true;
  return false;
}

namespace {

struct HfTextPrefixes {
  HfTextPrefix prefix;
  std::string_view text, multimodal;
};
constexpr HfTextPrefixes kHfTextPrefixes[] = {
    {HfTextPrefix::kModelLanguageModel, "model.", "model.language_model."},
    {HfTextPrefix::kModelLanguageModel, "lm_head.", "lm_head."},
    {HfTextPrefix::kLanguageModelModel, "model.", "language_model.model."},
    {HfTextPrefix::kLanguageModelModel, "lm_head.", "language_model.lm_head."},
};

}  // namespace

std::string hf_multimodal_name(std::string_view text_name, HfTextPrefix prefix) {
  for (const HfTextPrefixes& p : kHfTextPrefixes)
    if (p.prefix == prefix && text_name.starts_with(p.text))
      return std::string(p.multimodal) + std::string(text_name.substr(p.text.size()));
  return std::string(text_name);
}

std::optional<HfTextName> hf_text_model_name(std::string_view name) {
  for (const HfTextPrefixes& p : kHfTextPrefixes)
    if (name.starts_with(p.multimodal))
      return HfTextName{std::string(p.text) + std::string(name.substr(p.multimodal.size())), p.prefix};
  return std::nullopt;
}

std::optional<HfTensorTarget> hf_tensor_target(const HfArchitecture& row, std::string_view full_name, int n_layers,
                                               bool* ignored) {
  *ignored = false;
  if ((!row.tensors.dropped_prefix.empty() && full_name.starts_with(row.tensors.dropped_prefix)) ||
      hf_vision_tensor(row, full_name)) {
    *ignored = true;
    return std::nullopt;
  }
  std::optional<HfTextName> text;
  if (row.tensors.multimodal && !(text = hf_text_model_name(full_name))) return std::nullopt;
  const std::string_view name = text ? std::string_view(text->name) : full_name;
  for (const HfNamePair& p : kHfGlobal)
    if (p.hf == name) return HfTensorTarget{std::string(p.gguf), hf_conversion_for(row, p)};
  constexpr std::string_view kLayers = "model.layers.";
  if (!name.starts_with(kLayers)) return std::nullopt;
  std::string_view rest = name.substr(kLayers.size());
  const std::optional<int> layer = hf_parse_index(rest);
  if (!layer) return std::nullopt;
  if (*layer >= n_layers || rest.ends_with("rotary_emb.inv_freq")) {
    *ignored = true;
    return std::nullopt;
  }
  const std::string blk = fmt::format("blk.{}.", *layer);
  if (row.tensors.post_attention_norm_names)
    for (const HfNamePair& p : kHfGemmaLayer)
      if (p.hf == rest) return HfTensorTarget{blk + std::string(p.gguf), hf_conversion_for(row, p)};
  for (const HfNamePair& p : kHfLayer)
    if (p.hf == rest) return HfTensorTarget{blk + std::string(p.gguf), hf_conversion_for(row, p)};
  for (const HfExpertPart& e : kHfExperts) {
    if (!rest.starts_with(e.prefix)) continue;
    std::string_view tail = rest.substr(e.prefix.size());
    const std::optional<int> expert = hf_parse_index(tail);
    if (expert && tail == e.part) return HfTensorTarget{blk + std::string(e.gguf), HC::kExpert, *expert};
  }
  return std::nullopt;
}

namespace {

std::string hf_text_tensor_name(const HfArchitecture& row, std::string_view gguf_name, int expert) {
  for (const HfNamePair& p : kHfGlobal)
    if (p.gguf == gguf_name) return std::string(p.hf);
  constexpr std::string_view kBlk = "blk.";
  if (!gguf_name.starts_with(kBlk)) return "";
  std::string_view rest = gguf_name.substr(kBlk.size());
  const std::optional<int> layer = hf_parse_index(rest);
  if (!layer) return "";
  const std::string prefix = fmt::format("model.layers.{}.", *layer);
  for (const HfExpertPart& e : kHfExperts)
    if (e.gguf == rest && hf_row_spells(row, e.prefix))
      return fmt::format("{}{}{}.{}", prefix, e.prefix, expert, e.part);
  if (row.tensors.post_attention_norm_names)
    for (const HfNamePair& p : kHfGemmaLayer)
      if (p.gguf == rest) return prefix + std::string(p.hf);
  for (const HfNamePair& p : kHfLayer)
    if (p.gguf == rest && hf_row_spells(row, p.hf)) return prefix + std::string(p.hf);
  return "";
}

}  // namespace

std::string hf_tensor_name(const HfArchitecture& row, std::string_view gguf_name, int expert) {
  const std::string name = hf_text_tensor_name(row, gguf_name, expert);
  if (name.empty() || !row.tensors.multimodal) return name;
  return hf_multimodal_name(name, HfTextPrefix::kModelLanguageModel);
}

}  // namespace recur
