// The gemma3 row of the architecture table (architectures.h), text model, in llama.cpp's GGUF
// layout (src/llama-model.cpp, src/models/gemma3.cpp; Hugging Face's modeling_gemma3.py):
// gemma2's embedding scale sqrt(dim), GELU-tanh gated FFN and sandwich norms, plus qwen3's
// per-head QK RMSNorm; no attention soft-capping; logits soft-capped only when the file has
// final_logit_softcapping. Five of each six layers (layer % 6 < 5, llama.cpp's set_swa_pattern(6),
// HF's sliding_window_pattern) attend within attention.sliding_window and rotate by RoPE of base
// 10000 without scaling; every sixth is global, with rope.freq_base (1e6 in the released models)
// and the file's linear rope.scaling.factor. A file without a sliding window is global
// throughout (current llama.cpp). Query scale 1/sqrt(key_length) (query_pre_attn_scalar), but
// 1/sqrt(dim / heads) at 62 layers (27B), as llama.cpp. Tensors are llama's plus attn_q_norm,
// attn_k_norm, post_attention_norm and post_ffw_norm; output.weight when present, else the
// embedding (tied). The loader is LlamaModel's: every difference is a ModelConfig flag.
#pragma once

#include "core/status.h"
#include "engine/architectures.h"

namespace recur {

void gemma3_features(ModelConfig& c);
Status read_gemma3_keys(const ArchKeys& keys, ModelConfig& c);
void write_gemma3_keys(const ModelConfig& c, gguf::Writer& w);

}  // namespace recur
