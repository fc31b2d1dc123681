// A sequence's per-layer state as bytes, so that a prefill worker can hand a prompt's state to a
// decode worker (disaggregated serving, docs/serve.md) and the decode worker continues exactly
// where the prefill left off.
//
// One layer's state is one byte block:
//   byte 0 u32 magic 'RSST'   4 u32 kind (1 attention, 2 KDA, 3 MLA latent)   8 i64 count   16 payload
//   attention: count tokens; per token K then V, each [kv_heads, head_dim] float32, as
//              PagedKvCache::read dequantizes them (exact for f32 and bf16 caches; an int8 or
//              fp8 cache re-quantizes them on import).
//   MLA latent: count tokens; per token its [latent ; rope key] (kv_lora_rank + qk_rope
//              float32, the keys-only cache's one vector), dequantized and re-quantized alike.
//   KDA:       count floats: the convolution windows, then the plain recurrent state.
// Export reads what the layer holds now: inside a Batch layer hook (model.h) that is the state
// after this forward's layer, before the later layers run. Import needs a fresh sequence of a
// batch of the same model and configuration; set_sequence_position then makes its position the
// prompt length. TP > 1 and ReplaySSM states are refused (Batch::state_parts).
// Expert parallelism with TP = 1 (engine.ep > 1) is supported: every rank computes the attention
// and KDA layers whole, so each holds an identical copy of the state. Export reads rank 0's copy;
// import and set_sequence_position write and check every copy (SequenceStateParts::replicas).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/model.h"

namespace recur {

namespace kernels::attention {
class PagedKvCache;
}
namespace hybrid {
class KdaSequenceState;
}

// Where one live sequence's state lives in a batch (filled by Batch::state_parts).
struct SequenceStateParts {
  kernels::attention::PagedKvCache* kv = nullptr;  // null without attention layers
  int kv_seq = -1;                                 // the sequence's id in kv
  std::vector<int> kv_layer;                       // per model layer: its layer in kv, -1 for KDA
  std::vector<hybrid::KdaSequenceState*> kda;      // per model layer: null for attention
  int* position = nullptr;                         // the batch slot's token count
  // Other ranks' copies of the same state (engine.ep > 1, engine.tp = 1): import writes them
  // too; their own `replicas` are empty and their `position` is the same slot's.
  std::vector<SequenceStateParts> replicas;
};

inline constexpr size_t kSequenceStateHeaderBytes = 16;

// Bytes of the layer's state now (`tokens` < 0), or once the sequence holds `tokens` tokens.
Result<size_t> layer_state_bytes(Batch& batch, SeqId seq, int layer, int tokens = -1);
// Writes the layer's state into `out` (exactly layer_state_bytes(batch, seq, layer) bytes).
Status export_layer_state(Batch& batch, SeqId seq, int layer, std::span<std::byte> out);
// Installs a block export_layer_state wrote into the same layer of a fresh sequence.
Status import_layer_state(Batch& batch, SeqId seq, int layer, std::span<const std::byte> in);
// After every layer is imported: the sequence holds `position` tokens (attention layers must
// hold exactly that many).
Status set_sequence_position(Batch& batch, SeqId seq, int position);

}  // namespace recur
