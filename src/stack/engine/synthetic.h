// Synthetic models: random weights, seeded, in any storage type, written as GGUF in the layout
// of the config's architecture (llama.cpp's tensor names; architectures.h): biases N(0, 0.5),
// QK-norm weights 1 + N(0, 0.2) and the shared expert's gate row N(0, 1/dim) where it has them.
//
// Weight statistics keep activations finite and non-degenerate through every layer: matrices
// are N(0, 1/fan_in) so W x keeps the RMS of x, the two projections that write into the
// residual stream (attention output, FFN down) are further scaled by 1/sqrt(2 * layers) so the
// residual grows like sqrt(1 + layer / layers), norm weights are 1, embeddings N(0, 1) (N(0, 1/dim)
// where the architecture multiplies them by sqrt(dim)).
// The vocabulary is a synthetic SentencePiece one: control tokens, 256 byte tokens, then
// printable characters and letter n-grams with and without the word-start marker.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/tokenizer.h"

namespace recur {

struct SyntheticModelOptions {
  ModelConfig config;
  // 2-d weights (and stacked experts); norms stay F32. kI8 means W8A8: I8 <name> plus an F32
  // <name>.scale per row (engine/w8a8.h).
  gguf::TensorType dtype = gguf::TensorType::kF32;
  uint64_t seed = 1;
  // Llama 3 RoPE scaling: a rope_freqs.weight tensor of the divisors Llama 3.1's converter
  // computes (factor 8, low/high frequency factors 1 and 4, original context 8192).
  bool llama3_rope = false;
};

// A SentencePiece vocabulary of exactly `size` tokens (at least 259 + 95).
Result<Vocabulary> synthetic_vocabulary(int size);
// Builds the whole file in memory (config, vocabulary, tensors).
Result<gguf::Writer> synthetic_model(const SyntheticModelOptions& options);
Status write_synthetic_model(const SyntheticModelOptions& options, const std::string& path);

// Quantizes n floats (a multiple of 32) to Q8_0 blocks exactly as ggml's reference quantizer
// (what llama-quantize writes): per 32 values d = max|x| / 127, stored as fp16 (nearest even),
// and roundf(x * (1 / d)) (ties away from zero, d unrounded) as int8; an all-zero block is 0s.
std::vector<std::byte> quantize_q8_0(const float* x, int64_t n);

}  // namespace recur
