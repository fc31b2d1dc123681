// Hugging Face checkpoints, part 1: config.json and the table of the `architectures` recur reads.
//
// Each row names a Hugging Face class (config.json's architectures[0]), the row of the GGUF
// architecture table it becomes (architectures.h), how its config.json keys set ModelConfig
// (the keys of transformers' config class, as llama.cpp's convert_hf_to_gguf.py reads them), how
// they are written back (hf_export.h, the converter's inverse for tests), and the conversions its
// tensors need on the way to llama.cpp's layout (hf_tensor_names.h). Adding a Hugging Face
// architecture is adding a row here. docs/engine.md "Hugging Face checkpoints" lists them.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "engine/model_config.h"

namespace recur {

// The keys of one config.json, with typed lookups whose errors name the file and the key.
// A key that is absent or JSON null counts as absent (transformers writes null for unset keys).
class HfKeys {
 public:
  // `path`: where the object sits in the file, prefixed to key names in messages ("rope_scaling.").
  HfKeys(const nlohmann::json& j, std::string_view source, std::string path = "")
      : j_(j), source_(source), path_(std::move(path)) {}
  const nlohmann::json* find(std::string_view key) const;  // nullptr when absent or null
  bool has(std::string_view key) const { return find(key) != nullptr; }
  Status get(std::string_view key, int& out) const;  // required
  Status get_opt(std::string_view key, int& out) const;
  Status get_opt(std::string_view key, float& out) const;
  Status get_opt(std::string_view key, bool& out) const;
  Status get_opt(std::string_view key, std::string& out) const;
  // A key recur cannot honour unless it has the value `expected` (or is absent).
  Status refuse_unless(std::string_view key, bool expected, std::string_view why) const;
  std::string_view source() const { return source_; }
  const nlohmann::json& object() const { return j_; }
  std::string name(std::string_view key) const { return path_ + std::string(key); }  // for messages

 private:
  const nlohmann::json& j_;
  std::string_view source_;
  std::string path_;
};

// What a row's tensors need beyond renaming (hf_tensor_names.cc applies them).
struct HfTensorRules {
  // Llama / Mistral: q_proj / k_proj rows permuted per head as llama.cpp's converter does, so
  // GGUF llama's interleaved RoPE pairs (2i, 2i + 1) see Hugging Face's half-split pairs.
  bool permute_qk = false;
  // Gemma 2: RMSNorm weights are stored as w and used as 1 + w; llama.cpp's converter adds the 1.
  bool norm_plus_one = false;
  // post_attention_layernorm becomes post_attention_norm: Gemma 2 / 3's sandwich norm after
  // attention (pre_feedforward_layernorm is the FFN's input norm), Qwen3-Next's FFN input norm
  // under the name llama.cpp gives it.
  bool post_attention_norm_names = false;
  // Tensors under this prefix are dropped as llama.cpp's converter drops them (Qwen3-Next's
  // multi-token-prediction head "mtp.").
  std::string_view dropped_prefix;
  // Gemma3ForConditionalGeneration: the text model's tensors sit under model.language_model.
  // (transformers >= 4.52; the head is lm_head) or language_model.model. (4.50 - 4.51; the head
  // language_model.lm_head), beside the vision tower and projector, which are skipped as
  // llama.cpp's converter skips them (hf_tensor_names.h).
  bool multimodal = false;
};

struct HfArchitecture {
  std::string_view name;  // config.json architectures[0]
  Arch arch;              // the GGUF row it loads as
  // Sets the row's own hyper-parameters after the shared keys (hidden_size, layers, heads, ...).
  Status (*read)(const HfKeys& keys, ModelConfig& c);
  // Writes them back (hf_export.h).
  void (*write)(const ModelConfig& c, nlohmann::json& j);
  HfTensorRules tensors;
  // Gemma 3: the sliding layers' RoPE is a second one (rope_local_base_freq, or transformers 5's
  // rope_parameters.sliding_attention); every other row rotates all layers alike.
  bool rope_per_layer_type = false;
  // The text model's settings sit under this object of config.json (Gemma3ForConditionalGeneration:
  // "text_config"); empty: at the top level.
  std::string_view text_config;
  // The defaults of the row's config class (JSON), which absent keys take; empty: none.
  std::string_view defaults;
};

std::span<const HfArchitecture> hf_architectures();
std::string supported_hf_architectures();  // "LlamaForCausalLM, MistralForCausalLM, ..."
// The row named `name` (or the first row of `arch`), or an error naming the file, the name and
// the supported list.
Result<const HfArchitecture*> find_hf_architecture(std::string_view name, std::string_view source);
const HfArchitecture* hf_architecture_of(Arch arch);
// The row of `arch` whose checkpoints hold a multimodal model (Gemma3ForConditionalGeneration), or nullptr.
const HfArchitecture* hf_multimodal_architecture_of(Arch arch);

// One RoPE as config.json gives it: transformers 4's base key (rope_theta; Gemma 3's sliding
// layers: rope_local_base_freq) and rope_scaling, or transformers 5's rope_parameters, one object
// ({rope_type, rope_theta, factor, ...}) or one per layer type ({"full_attention": {...},
// "sliding_attention": {...}}). Old and new keys may both be present only where they agree.
struct HfRopeQuery {
  std::string_view layer_type = "full_attention";  // the entry of a per-layer-type rope_parameters
  std::string_view theta_key = "rope_theta";       // transformers 4's key for this RoPE's base
  bool scaling_key = true;                         // whether transformers 4's rope_scaling applies to it
  // The row rotates every layer alike: a per-layer-type entry other than layer_type must be null
  // or equal to it.
  bool one_rope = true;
};
struct HfRope {
  std::optional<HfKeys> scaling;  // the object holding rope_type, factor, ... (rope_scaling or a rope_parameters entry)
  std::string where;              // its name in config.json, for messages ("rope_parameters.full_attention")
  std::string type = "default";   // its "rope_type" or "type"
  std::optional<float> theta;     // the base, where given
  std::string theta_where;        // its name ("rope_theta", "rope_parameters.rope_theta")
  std::optional<float> partial_rotary_factor;  // top-level or inside rope_parameters (transformers 5)
};
Result<HfRope> read_hf_rope(const HfKeys& k, const HfRopeQuery& query = {});

// Llama 3.1's RoPE scaling (rope_scaling.rope_type "llama3"): the per-pair divisors llama.cpp's
// converter writes as rope_freqs.weight.
struct Llama3Rope {
  double factor = 8, low_freq_factor = 1, high_freq_factor = 4, original_context = 8192;
};
std::vector<float> llama3_rope_divisors(int head_dim, double theta, const Llama3Rope& rope);

struct HfModelConfig {
  const HfArchitecture* row = nullptr;
  ModelConfig config;
  std::vector<float> rope_freqs;  // non-empty: a rope_freqs.weight tensor (Llama 3 scaling)
  int bos = -1, eos = -1;         // bos_token_id / eos_token_id (eos: the first of a list)
};

// Parses config.json; errors name `source` and the key that is missing, mistyped or refused.
Result<HfModelConfig> read_hf_config(std::string_view json_text, std::string_view source);
// The config.json of `c` (hf_export.h); bos / eos ids when >= 0. `row` picks the class (default:
// the first of c.arch); a row with a text_config nests the text model's keys there, leaving out
// those at the config class's defaults as transformers' save_pretrained does, beside a small
// vision_config.
std::string write_hf_config(const ModelConfig& c, int bos, int eos, const HfArchitecture* row = nullptr);

}  // namespace recur
