// A GGUF model in llama.cpp's layout written as a Hugging Face directory: llama.cpp's converter
// run backwards (Llama q/k rows un-permuted, Gemma 2 / 3 and Qwen3-Next norms minus 1, experts
// un-stacked, MLA's attn_k_b / attn_v_b joined back into kv_b_proj, Kimi's and Qwen3-Next's ssm_a
// back to A_log, Qwen3-Next's attn_qkv + attn_gate back into in_proj_qkvz), with config.json,
// tokenizer.json and tokenizer_config.json. It exists so tests can load the same weights both
// ways (hf_checkpoint_test.cc) and `recur model new --hf` can write a checkpoint to try; Gemma 3
// also as released, in Gemma3ForConditionalGeneration's multimodal form.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/hf_tensor_names.h"

namespace recur {

struct HfExportOptions {
  int shards = 1;  // > 1: model-0000i-of-0000N.safetensors with model.safetensors.index.json
  // Set: the multimodal form of the row (Gemma3ForConditionalGeneration: config.json's
  // text_config, the text model under this prefix, and two small vision-tower / projector tensors
  // for the loader to skip); refused for rows without one.
  std::optional<HfTextPrefix> multimodal;
};

// F32, F16 and BF16 tensors only; errors name the tensor that has no Hugging Face form.
Status export_hf_checkpoint(const gguf::File& file, const std::string& dir, const HfExportOptions& options = {});

}  // namespace recur
