// The synthetic model of a gate workload ([workload.engine.synthetic], [workload.program.synthetic]):
// any row of the architecture table (engine/architectures.h) at small sizes, random weights,
// written once into the model cache (engine/model_cache.h) under a name that spells every field.
//
// Fields apply by row: every row takes the sizes, dtype and seed; the KDA rows (hybrid,
// kimi-linear) pattern and kda_head_dim; the MoE rows (qwen2moe, qwen3moe, deepseek2, kimi-linear,
// and hybrid optionally) experts, experts_used, shared_expert, shared_ffn; the MLA rows
// (deepseek2, kimi-linear) kv_lora_rank, q_lora_rank, qk_nope, qk_rope, v_head_dim, leading_dense,
// dense_ffn, and deepseek2 gating. A field written for a row that has no place for it is refused
// with its position, not dropped (a reader of the spec would believe it). docs/agent.md has the
// reference with the defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "engine/synthetic.h"

namespace recur::gate {

class TomlTable;

struct SyntheticModel {
  std::string arch = "llama";  // general.architecture: a row of the table (`recur model new --arch`)
  // Every row. MLA rows have no kv_heads (one latent per token); ffn is each expert's width on MoE rows.
  int dim = 128, layers = 2, heads = 4, kv_heads = 0, ffn = 0, vocab = 512, context = 1024;
  std::string dtype = "f32";  // f32, f16, bf16, q8_0
  uint64_t seed = 1;
  // KDA rows: 'k' KDA, 'a' attention (MLA on kimi-linear), repeated over the layers; K = V per
  // head (hybrid: dim / kda_head_dim heads; kimi-linear: `heads` heads).
  std::string pattern = "kkka";
  int kda_head_dim = 32;
  // MoE rows. Unset: the row's default (4 experts, hybrid 0 = dense SwiGLU; a shared expert on
  // qwen2moe, deepseek2, kimi-linear). shared_ffn 0: one expert wide (MLA rows: whole experts).
  std::optional<int> experts;
  int experts_used = 2;
  std::optional<bool> shared_expert;
  int shared_ffn = 0;
  // MLA rows (deepseek2, kimi-linear): the latent, the per-head q/k split, the value width, the
  // leading dense layers (dense_ffn wide; 0: 8/3 dim) and deepseek2's expert scores.
  int kv_lora_rank = 32, q_lora_rank = 0, qk_nope = 16, qk_rope = 16, v_head_dim = 16;
  int leading_dense = 1, dense_ffn = 0;
  std::string gating = "softmax";  // deepseek2: softmax (V2) or sigmoid (V3: exp_probs_b, renormalized)
};

// Reads and checks one synthetic table: keys and ranges, the arch against the architecture
// table, fields the row has no place for, and the resulting config (ModelConfig::validate).
Result<SyntheticModel> read_synthetic_model(TomlTable t);

// The file the engine loads: the row's features and the fields above.
Result<SyntheticModelOptions> synthetic_options(const SyntheticModel& m);

// The model cache's name for it ("gate-<arch>-d..-l..-..."): different fields, different names.
std::string synthetic_model_name(const SyntheticModel& m);

}  // namespace recur::gate
