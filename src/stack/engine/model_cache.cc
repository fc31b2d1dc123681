#include "engine/model_cache.h"

#include <cstdlib>
#include <filesystem>

#include "core/log.h"

namespace recur {

namespace fs = std::filesystem;

std::string model_cache_dir() {
  if (const char* dir = std::getenv("RECUR_CACHE_DIR")) return (fs::path(dir) / "models").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : "/tmp") / ".cache/recur/models").string();
}

Result<std::string> cached_synthetic_model(const SyntheticModelOptions& options, std::string_view name) {
  const fs::path dir = model_cache_dir();
  const fs::path path = dir / (std::string(name) + ".gguf");
  if (fs::exists(path)) return path.string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("{}: cannot create: {}", dir.string(), ec.message());
  LOG_INFO("writing the model {} (once)", path.string());
  RECUR_RETURN_IF_ERROR(write_synthetic_model(options, path.string()));
  return path.string();
}

Result<std::string> default_model_path() {
  SyntheticModelOptions o;
  ModelConfig& c = o.config;
  c.arch = Arch::kHybrid;
  c.dim = 384;
  c.n_layers = 6;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.ffn_dim = 1024;
  c.vocab = 32000;
  c.context = 4096;
  c.layer_pattern = "kkka";
  c.kda_heads = 3;
  c.kda_key_heads = 3;
  c.kda_head_dim = 128;
  c.conv_size = 4;
  c.tied_embeddings = true;
  o.seed = 1;
  return cached_synthetic_model(o, "default-hybrid-d384-l6-v32000-f32-seed1");
}

Result<gguf::TensorType> parse_storage_type(std::string_view name) {
  if (name == "f32") return gguf::TensorType::kF32;
  if (name == "f16") return gguf::TensorType::kF16;
  if (name == "bf16") return gguf::TensorType::kBF16;
  if (name == "q8_0") return gguf::TensorType::kQ8_0;
  if (name == "w8a8") return gguf::TensorType::kI8;  // I8 weights + an F32 scale per row (engine/w8a8.h)
  return unsupported("storage type '{}': expected f32, f16, bf16, q8_0 or w8a8", name);
}

}  // namespace recur
