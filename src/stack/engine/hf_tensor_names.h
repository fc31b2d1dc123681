// Hugging Face checkpoints, part 2: tensor names. Each Hugging Face tensor of a row
// (hf_config.h) becomes a tensor of llama.cpp's GGUF layout (the names of convert_hf_to_gguf.py
// and gguf-py's tensor_mapping.py), with the conversion it needs on the way:
//   model.embed_tokens -> token_embd, model.norm -> output_norm, lm_head -> output;
//   model.layers.L.<x> -> blk.L.<y>: input_layernorm -> attn_norm, self_attn.{q,k,v,o}_proj ->
//   attn_{q,k,v,output}, mlp.{gate,up,down}_proj -> ffn_{gate,up,down}, mlp.experts.E.* (and
//   block_sparse_moe.experts.E.w1/w2/w3) stacked into ffn_*_exps, the MLA, KDA, shared-expert
//   and norm tensors likewise (the table in hf_tensor_names.cc).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "engine/hf_config.h"

namespace recur {

enum class HfConversion : uint8_t {
  kNone,         // the bytes as stored, dims reversed (PyTorch's outermost-first to ggml's ne[])
  kPermuteQ,     // Llama q_proj: rows permuted per head (llama.cpp's converter), a copy
  kPermuteK,     // Llama k_proj: the same over the KV heads
  kNormPlusOne,  // Gemma 2 / 3, Qwen3-Next RMSNorm: 1 + w as F32, a copy
  kNegExp,       // A_log: -exp(A_log) as F32, a copy; Kimi's [1, 1, heads, 1] as {1, heads}, a vector as is
  kConv,         // Kimi q/k/v_conv1d [channels, 1, taps] or [channels, taps]: {taps, 1, channels}
  kFlatten,      // a vector stored with unit dims ([1, n]): {n}
  kExpert,       // one expert of ffn_*_exps: stacked with its siblings, a copy
  kConvSqueezed, // Qwen3-Next conv1d [channels, 1, taps] or [channels, taps]: {taps, channels}
  kSplitQkvz,    // Qwen3-Next in_proj_qkvz: rows regrouped into attn_qkv and attn_gate, copies
};

struct HfTensorTarget {
  std::string gguf_name;
  HfConversion conversion = HfConversion::kNone;
  int expert = -1;  // kExpert: which one
};

// What becomes of Hugging Face tensor `name` in a model of `row` with n_layers layers:
// a target; std::nullopt with *ignored set when the tensor is deliberately dropped (rotary
// inv_freq buffers, layers past n_layers such as DeepSeek-V3's multi-token-prediction layer, a
// multimodal row's vision tensors);
// std::nullopt with *ignored clear when recur maps no such tensor.
std::optional<HfTensorTarget> hf_tensor_target(const HfArchitecture& row, std::string_view name, int n_layers,
                                               bool* ignored);

// The inverse, for messages and the exporter: the Hugging Face name of GGUF tensor `gguf_name`
// (for ffn_*_exps, expert `expert`'s; for a multimodal row, under model.language_model.); empty
// when none maps to it.
std::string hf_tensor_name(const HfArchitecture& row, std::string_view gguf_name, int expert = 0);

// Qwen3-Next's in_proj_qkvz holds, per key head j, [q_j (K rows) | k_j (K) | v_j (G V) | z_j (G V)]
// (G = value heads per key head); llama.cpp's converter regroups it into attn_qkv [every q | every
// k | every v] and attn_gate [every z]. Row r of attn_qkv and attn_gate stacked (attn_gate's rows
// numbered after attn_qkv's) is row qwen3next_qkvz_row(r) of in_proj_qkvz.
struct QkvzShape {
  int64_t key_heads, head_dim, value_heads_per_key;  // HK, K (= V), G
  int64_t qkv_rows() const { return key_heads * head_dim * (2 + value_heads_per_key); }
  int64_t rows() const { return 2 * key_heads * head_dim * (1 + value_heads_per_key); }
};
int64_t qwen3next_qkvz_row(int64_t r, const QkvzShape& s);

// Gemma3ForConditionalGeneration (HfTensorRules::multimodal) keeps the text model's tensors
// under one of two prefixes, by the transformers version that saved it.
enum class HfTextPrefix : uint8_t {
  kModelLanguageModel,  // transformers >= 4.52: model.language_model.*, the head lm_head.*
  kLanguageModelModel,  // transformers 4.50 - 4.51: language_model.model.*, language_model.lm_head.*
};
// Whether `name` is a tensor of a multimodal row's vision tower or projector, which recur skips
// as llama.cpp's converter does (vision_tower., multi_modal_projector., multimodal_projector.,
// vision_model., each also under model.).
bool hf_vision_tensor(const HfArchitecture& row, std::string_view name);
// The name of text-model tensor `text_name` (model.*, lm_head.*) in a multimodal checkpoint.
std::string hf_multimodal_name(std::string_view text_name, HfTextPrefix prefix);
// The inverse: the text-model name and the prefix it had; nullopt under neither prefix.
struct HfTextName {
  std::string name;
  HfTextPrefix prefix;
};
std::optional<HfTextName> hf_text_model_name(std::string_view name);

// The Llama Q/K row permutation: row r of the converted tensor is row permuted_row(r) of the
// Hugging Face one (heads of head_dim rows; inverse = true for the exporter's direction).
int64_t llama_permuted_row(int64_t r, int64_t head_dim, bool inverse);

}  // namespace recur
