// The llama architecture as GGUF defines it (what llama.cpp runs): embed, then per layer
// RMSNorm -> GQA attention with RoPE (interleaved pairs, GGUF's layout) -> residual ->
// RMSNorm -> SwiGLU -> residual; final RMSNorm and the LM head. A loader only: llama is the
// layer pattern "all attention, no experts" of the one forward pass (transformer.h, forward.h).
// The same loader binds every attention-only row of the architecture table (architectures.h:
// qwen2, qwen3, qwen2moe, qwen3moe, phi3), whose differences are the config's feature flags.
// The sequential TP test session is reference/llama_session.h (plain llama only); the float64
// reference (engine.numerics=f64_reference) is reference/hybrid_reference.h.
#pragma once

#include <memory>
#include <string>

#include "engine/transformer.h"

namespace recur {

class LlamaModel final : public TransformerModel {
 public:
  // Loads a GGUF file of an attention-only architecture: config, tokenizer and every tensor, checked.
  static Result<std::unique_ptr<LlamaModel>> load(const std::string& path);
  // Binds an already parsed file (the File must outlive the model's use of the bytes),
  // regrouping Q8_0 / F16 matrices as `options` say.
  static Result<std::unique_ptr<LlamaModel>> from_file(gguf::File file, const ModelLoadOptions& options = {});

 private:
  Result<std::unique_ptr<Session>> reference_session(int max_tokens) const override;
};

}  // namespace recur
