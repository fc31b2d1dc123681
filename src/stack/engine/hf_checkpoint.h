// Hugging Face checkpoints, part 4: a model directory loaded as the GGUF file llama.cpp's
// converter would have written, without writing it.
//
// The directory holds config.json (hf_config.h), the weights as model.safetensors or as shards
// named by model.safetensors.index.json's weight_map, and tokenizer.json (hf_tokenizer.h; with
// tokenizer_config.json's add_bos_token when present). The result is a gguf::File whose metadata
// is what ModelConfig::to_gguf and Vocabulary::to_gguf write and whose tensors carry llama.cpp's
// names (hf_tensor_names.h): the architecture loaders (architectures.h) then bind it as any GGUF.
//
// Tensors are used in place, in the safetensors shards as mapped (or read into anonymous memory,
// as engine.weights_memory says), dims reversed; F32, F16 and BF16 are kept as stored (BF16 is a
// weight type of the GEMM kernels, so widening would only double the bytes streamed). Copies are
// made only where the layout differs: Llama's permuted q/k rows, Gemma 2 / 3's and Qwen3-Next's
// 1 + w norms (F32), Kimi's and Qwen3-Next's -exp(A_log) (F32), Qwen3-Next's in_proj_qkvz
// regrouped into attn_qkv and attn_gate, and the routed experts stacked into one tensor per
// projection.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "engine/engine_options.h"
#include "engine/gguf.h"
#include "engine/hf_config.h"
#include "engine/hf_tensor_names.h"
#include "engine/model.h"

namespace recur {

// Whether `path` is a directory holding config.json (a Hugging Face checkpoint).
bool is_hf_checkpoint(const std::string& path);

// Where the weights are: one model.safetensors, or the shards model.safetensors.index.json's
// weight_map names (plain .safetensors file names in the directory; anything else is refused).
struct HfShardIndex {
  std::vector<std::string> files;                         // in first-mention order
  std::map<std::string, std::string, std::less<>> owner;  // tensor -> file (index only)
};
Result<HfShardIndex> parse_hf_shard_index(std::string_view text, std::string_view source);

struct HfCheckpoint {
  gguf::File file;
  // GGUF tensor name -> where it came from ("'model.layers.0.self_attn.q_proj.weight' [64, 64]
  // in 'model.safetensors'"), for messages.
  std::map<std::string, std::string, std::less<>> origin;
  const HfArchitecture* row = nullptr;
  // A multimodal checkpoint's text-model prefix (the last one seen), for naming missing tensors.
  HfTextPrefix text_prefix = HfTextPrefix::kModelLanguageModel;
  // What the load left out, for the user ("skipped 2 vision tower / projector tensors ...");
  // load_hf_model prints each once on stderr.
  std::vector<std::string> notes;
};

// The checkpoint as a GGUF file in llama.cpp's layout. Errors name the file (config.json, a
// shard, the index) and the key or tensor at fault; a truncated shard is named with the tensor
// that runs past its end.
Result<HfCheckpoint> read_hf_checkpoint(const std::string& dir, FileMemory memory = FileMemory::kMap);

// Loads the checkpoint by its architecture's loader (load_model does for a directory); a
// tensor the loader refuses (missing, mis-shaped) is named with its Hugging Face name and shard.
// The checkpoint's notes (tensors skipped) go to stderr, once per load.
Result<std::unique_ptr<Model>> load_hf_model(const std::string& dir, const LoadOptions& options);

}  // namespace recur
