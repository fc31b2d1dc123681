#include "engine/model.h"

#include "engine/hybrid.h"
#include "engine/llama.h"

#include <fmt/format.h>

#include "core/cpu_features.h"

namespace recur {

// Where the weights live while the model runs (docs/engine.md "Weights in memory"; anon decodes
// 1.1-1.3x faster on one thread, docs/performance.md "Issue #7: weights in anonymous huge pages").
RECUR_KNOB(engine_weights_memory,
           {.name = "engine.weights_memory", .type = KnobType::kEnum, .choices = {"mmap", "anon"},
            .default_value = "anon",
            .components = {"engine:weights", "memory:tlb"},
            .help = "model bytes: mmap (the file's 4 KiB page-cache pages) or anon (read into 2 MiB-aligned "
                    "anonymous memory madvised for transparent huge pages; mmap if the file exceeds half "
                    "of MemAvailable)"});

// How Llama's Q8_0 and F16 matrices are laid out while the model runs (docs/engine.md
// "Weight layout").
RECUR_KNOB(engine_weight_layout,
           {.name = "engine.weight_layout", .type = KnobType::kEnum, .choices = {"rows", "r16"},
            .default_value = "r16",
            .components = {"engine:weights", "kernel:gemm"},
            .help = "Llama Q8_0 and F16 matrices: rows (the file's row layout, read in place) or r16 "
                    "(regrouped at load into 16-row groups: one load is 4 k (Q8_0) or 1 k (F16) of 16 rows, "
                    "GEMV near the read bandwidth; Q8_0 needs kernel.gemm.q8_0_activations=q8_0, else rows)"});

// How long the engine's pool threads poll for the next job before sleeping (ThreadPoolOptions).
RECUR_KNOB(engine_pool_spin_us,
           {.name = "engine.pool_spin_us", .type = KnobType::kInt, .min = 0, .max = 100000, .default_value = "200",
            .components = {"engine:threads", "core:thread_pool"},
            .help = "microseconds a pool thread polls for the next job (and the caller for the last chunk) before "
                    "sleeping on a futex: decode hands out ~113 GEMVs a token, each a futex wake-up without it; "
                    "0 sleeps at once; ignored when threads exceed the CPUs"});

Result<ThreadPoolOptions> engine_pool_options(const Config& knobs, int threads) {
  RECUR_ASSIGN_OR_RETURN(int64_t spin, knobs.get_int("engine.pool_spin_us"));
  return ThreadPoolOptions{.threads = threads, .pin = true, .spin_us = int(spin)};
}

std::string probe_conditions_note(const ThreadPool& pool, const ThreadPoolOptions& options) {
  const std::string polling = pool.spins() ? fmt::format("polling {} us before sleeping", options.spin_us)
                              : options.spin_us > 0 ? "sleeping at once (more threads than CPUs: polling is off)"
                                                    : "sleeping at once";
  return fmt::format("probe conditions: {} thread{}, {}, {} (engine.pool_spin_us), ISA {} (core.isa)", pool.size(),
                     pool.size() == 1 ? "" : "s", options.pin ? "pinned" : "not pinned", polling,
                     isa_name(active_isa()));
}

Result<ModelLoadOptions> model_load_options(const Config& knobs) {
  auto layout = knobs.get("engine.weight_layout");
  if (!layout) return unexpected<Error>(layout.error());
  RECUR_ASSIGN_OR_RETURN(gemm::Q8Activations q8, gemm::q8_activations_from_config(knobs));
  return ModelLoadOptions{.regroup_q8_0 = *layout == "r16" && q8 == gemm::Q8Activations::kQ8_0,
                          .regroup_f16 = *layout == "r16"};
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

Result<std::unique_ptr<Batch>> Model::new_batch(ThreadPool&, const BatchOptions&, const Config&) const {
  return unsupported("architecture '{}' has no batched forward", arch_name(config().arch));
}

Result<std::unique_ptr<Model>> model_from_file(gguf::File file, const ModelLoadOptions& options) {
  RECUR_ASSIGN_OR_RETURN(std::string arch, file.get_string("general.architecture"));
  if (arch == "llama") {
    RECUR_ASSIGN_OR_RETURN(auto m, LlamaModel::from_file(std::move(file), options));
    return std::unique_ptr<Model>(std::move(m));
  }
  if (arch == "hybrid") {
    RECUR_ASSIGN_OR_RETURN(auto m, HybridModel::from_file(std::move(file), options));
    return std::unique_ptr<Model>(std::move(m));
  }
  return unsupported("{}: architecture '{}' (recur runs llama and hybrid)", file.source(), arch);
}

Result<std::unique_ptr<Model>> load_model(const std::string& path, const Config& knobs) {
  auto memory = knobs.get("engine.weights_memory");
  if (!memory) return unexpected<Error>(memory.error());
  const FileMemory where = *memory == "anon" ? FileMemory::kAnonymous : FileMemory::kMap;
  RECUR_ASSIGN_OR_RETURN(ModelLoadOptions options, model_load_options(knobs));
  RECUR_ASSIGN_OR_RETURN(gguf::File file, gguf::read(path, where));
  return model_from_file(std::move(file), options);
}

Result<std::unique_ptr<Model>> load_model(const std::string& path) { return load_model(path, Config()); }

}  // namespace recur
