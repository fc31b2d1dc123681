// Models written once into the model cache: the embedded default of `recur generate` and named
// synthetic models (gate workloads). The cache is $RECUR_CACHE_DIR/models, else
// ~/.cache/recur/models. Files are written through a temporary file and a rename (gguf::Writer),
// so processes racing to write the same model each leave a complete file.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/synthetic.h"

namespace recur {

std::string model_cache_dir();

// The path of `<cache>/<name>.gguf`, writing the synthetic model there first if it is missing.
Result<std::string> cached_synthetic_model(const SyntheticModelOptions& options, std::string_view name);

// The embedded default: a small synthetic hybrid (KDA:attention 3:1, dense SwiGLU, about 26M
// parameters, f32: about 100 MB, written once in about a second, so a newcomer's first
// `recur generate` answers at once). Benchmarks that want a realistic size name their model.
Result<std::string> default_model_path();

// "f32", "f16", "bf16", "q8_0", "w8a8" (kI8: I8 + per-row F32 scales): the storage types
// synthetic models are written in.
Result<gguf::TensorType> parse_storage_type(std::string_view name);

}  // namespace recur
