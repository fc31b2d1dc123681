// The architecture table: one row per `general.architecture` recur runs, naming its loader and
// the features it turns on (model_config.h's flags, which the shared blocks obey). Adding an
// architecture is adding a row here: its name, its feature flags, the hyper-parameter keys of
// its own (beyond the {arch}.* keys every row shares, read by ModelConfig::from_gguf) and the
// loader that binds its tensor names into LayerWeights (transformer.h).
//
// Names, keys and semantics follow llama.cpp (src/llama-arch.cpp, src/models/<arch>.cpp,
// gguf-py/gguf/constants.py); docs/engine.md "Architectures" lists the rows.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"
#include "engine/weights.h"

namespace recur {

// The {arch}.* hyper-parameters of one file.
class ArchKeys {
 public:
  ArchKeys(const gguf::File& f, std::string_view arch) : f_(f), prefix_(std::string(arch) + ".") {}
  bool has(std::string_view key) const { return f_.find(prefix_ + std::string(key)) != nullptr; }
  Status get(std::string_view key, int& out) const;  // required
  // Absent keys leave `out` as it was.
  Status get_opt(std::string_view key, int& out) const;
  Status get_opt(std::string_view key, float& out) const;
  Status get_opt(std::string_view key, std::string& out) const;
  const gguf::File& file() const { return f_; }

 private:
  const gguf::File& f_;
  std::string prefix_;
};

struct Architecture {
  std::string_view name;  // general.architecture
  Arch arch;
  // Sets the architecture's feature flags on a fresh config (from_gguf, `recur model new`).
  void (*features)(ModelConfig& c);
  // Reads the keys of this architecture's own, after the shared ones.
  Status (*read_keys)(const ArchKeys& keys, ModelConfig& c);
  // Writes them (ModelConfig::to_gguf, after the shared ones, which it may rewrite).
  void (*write_keys)(const ModelConfig& c, gguf::Writer& w);
  // Binds a parsed file of this architecture.
  Result<std::unique_ptr<Model>> (*load)(gguf::File file, const ModelLoadOptions& options);
  // Layers follow ModelConfig::layer_pattern: 'k' KDA, 'a' attention (hybrid, kimi-linear).
  bool kda_layers = false;
  // Attention is MLA: read_keys reads the attention keys (head_count_kv, key / value lengths,
  // YaRN RoPE scaling) that from_gguf reads for the other rows (deepseek2, kimi-linear).
  bool mla = false;
};

// The MoE keys of qwen2moe / qwen3moe (and qwen3next): expert_count, expert_used_count, the
// experts' width expert_feed_forward_length (absent: feed_forward_length / used) and, with a
// shared expert, expert_shared_feed_forward_length (absent: feed_forward_length).
Status read_moe_keys(const ArchKeys& k, ModelConfig& c);
void write_moe_keys(const ModelConfig& c, gguf::Writer& w);

std::span<const Architecture> architectures();
// The row named `name`, or an error naming the file (`source`), the name and the supported list.
Result<const Architecture*> find_architecture(std::string_view name, std::string_view source);
const Architecture& architecture(Arch a);
std::string supported_architectures();  // "llama, qwen2, ..."

}  // namespace recur
