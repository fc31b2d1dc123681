#include "engine/model.h"

#include "engine/architectures.h"
#include "engine/hf_checkpoint.h"

#include <fmt/format.h>

#include "core/cpu_features.h"
#include "trace/trace.h"

namespace recur {

std::string probe_conditions_note(const ThreadPool& pool, const ThreadPoolOptions& options) {
  const std::string polling = pool.spins() ? fmt::format("polling {} us before sleeping", options.spin_us)
                              : options.spin_us > 0 ? "sleeping at once (more threads than CPUs: polling is off)"
                                                    : "sleeping at once";
  return fmt::format("probe conditions: {} thread{}, {}, {} (engine.pool_spin_us), ISA {} (core.isa)", pool.size(),
                     pool.size() == 1 ? "" : "s", options.pin ? "pinned" : "not pinned", polling,
                     isa_name(active_isa()));
}

uint64_t decode_weight_bytes(const gguf::File& file, const ModelConfig& c) {
  double total = 0;
  for (const gguf::TensorInfo& t : file.tensors) {
    if (t.name == "token_embd.weight") {
      if (c.tied_embeddings) total += double(t.bytes);
      continue;
    }
    if (t.name.find("_exps.") != std::string::npos && c.n_experts > 0)
      total += double(t.bytes) * c.n_experts_used / c.n_experts;
    else
      total += double(t.bytes);
  }
  return uint64_t(total);
}

Result<std::span<const float>> Session::prefill(std::span<const TokenId> tokens) {
  if (tokens.empty()) return invalid_argument("prefill: no tokens");
  std::span<const float> logits;
  for (TokenId t : tokens) {
    RECUR_ASSIGN_OR_RETURN(logits, step(t));
  }
  return logits;
}

Result<std::unique_ptr<Batch>> Model::new_batch(ThreadPool&, const BatchOptions&, const EngineOptions&) const {
  return unsupported("architecture '{}' has no batched forward", arch_name(config().arch));
}

Result<std::unique_ptr<Session>> Model::new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const {
  RECUR_ASSIGN_OR_RETURN(EngineOptions options, engine_options_from(knobs, config()));
  return new_session(pool, max_tokens, options);
}

Result<std::unique_ptr<Batch>> Model::new_batch(ThreadPool& pool, const BatchOptions& batch,
                                                const Config& knobs) const {
  RECUR_ASSIGN_OR_RETURN(EngineOptions options, engine_options_from(knobs, config()));
  return new_batch(pool, batch, options);
}

Result<std::unique_ptr<Model>> model_from_file(gguf::File file, const ModelLoadOptions& options) {
  RECUR_ASSIGN_OR_RETURN(std::string name, file.get_string("general.architecture"));
  RECUR_ASSIGN_OR_RETURN(const Architecture* arch, find_architecture(name, file.source()));
  return arch->load(std::move(file), options);
}

Result<FileMemory> weights_file_memory(const Config& knobs) {
  RECUR_ASSIGN_OR_RETURN(LoadOptions options, load_options_from(knobs));
  return options.memory == WeightsMemory::kAnon ? FileMemory::kAnonymous : FileMemory::kMap;
}

Result<std::unique_ptr<Model>> load_model(const std::string& path, const Config& knobs) {
  RECUR_ASSIGN_OR_RETURN(LoadOptions options, load_options_from(knobs));
  if (is_hf_checkpoint(path)) return load_hf_model(path, options);  // a Hugging Face directory
  RECUR_ASSIGN_OR_RETURN(FileMemory where, weights_file_memory(knobs));
  RECUR_ASSIGN_OR_RETURN(gguf::File file, gguf::read(path, where));
  return model_from_file(std::move(file), options.model);
}

Result<gguf::File> read_model_file(const std::string& path, FileMemory memory) {
  if (!is_hf_checkpoint(path)) return gguf::read(path, memory);
  RECUR_ASSIGN_OR_RETURN(HfCheckpoint ck, read_hf_checkpoint(path, memory));
  return std::move(ck.file);
}

Result<std::shared_ptr<const MappedFile>> read_model_bytes(const std::string& path, const Config& knobs) {
  if (is_hf_checkpoint(path))
    return unsupported("{}: a Hugging Face checkpoint directory; sharing one file's bytes between models (the gate's "
                       "arms) needs a GGUF file (generate, serve and engine bench load the directory)",
                       path);
  RECUR_ASSIGN_OR_RETURN(FileMemory where, weights_file_memory(knobs));
  RECUR_ASSIGN_OR_RETURN(MappedFile bytes, MappedFile::open(path, where));
  return std::make_shared<const MappedFile>(std::move(bytes));
}

Result<std::unique_ptr<Model>> load_model_over(const MappedFile& bytes, const Config& knobs) {
  RECUR_ZONE("load_model");
  RECUR_ASSIGN_OR_RETURN(LoadOptions load, load_options_from(knobs));
  const ModelLoadOptions& options = load.model;
  zone.arg("memory", bytes.anonymous() ? "anon" : "mmap");
  zone.arg("regroup_q8_0", options.regroup_q8_0 ? 1 : 0);
  zone.arg("regroup_f16", options.regroup_f16 ? 1 : 0);
  zone.arg("amx", !options.amx_tiles ? "off"
                  : *options.amx_tiles == gemm::TileBackend::kHardware ? "hardware"
                                                                        : "emulated");
  RECUR_ASSIGN_OR_RETURN(gguf::File file, gguf::parse(bytes.bytes(), bytes.path()));
  return model_from_file(std::move(file), options);
}

Result<std::unique_ptr<Model>> load_model(const std::string& path) { return load_model(path, Config()); }

}  // namespace recur
