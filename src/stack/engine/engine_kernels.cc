#include "engine/engine_kernels.h"

#include <charconv>

#include <fmt/format.h>

#include "kernels/registry.h"

namespace recur {

namespace {

// The variant kernel.<kernel>.variant names: "auto" gives the best runnable one (null when
// `best` is false).
Result<const kernels::VariantSpec*> resolve_variant(const Config& knobs, std::string_view kernel, bool best = true) {
  const std::string knob = fmt::format("kernel.{}.variant", kernel);
  RECUR_ASSIGN_OR_RETURN(std::string value, knobs.get(knob));
  RECUR_ASSIGN_OR_RETURN(const kernels::KernelSpec* spec, kernels::KernelRegistry::global().lookup(kernel));
  const kernels::VariantSpec* v = nullptr;
  if (value == "auto") {
    if (!best) return nullptr;
    v = spec->best_variant();
    if (v == nullptr) return unsupported("{}=auto: no variant of kernel {} runs on this machine", knob, kernel);
  } else {
    auto found = spec->lookup_variant(value);
    if (!found) return invalid_argument("{}={}: {}", knob, value, found.error().message());
    v = *found;
  }
  if (Status s = kernels::check_runnable(*v); !s) return unsupported("{}={}: {}", knob, value, s.error().message());
  return v;
}

Result<KernelChoice> resolve(const Config& knobs, std::string_view kernel) {
  RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* v, resolve_variant(knobs, kernel));
  return KernelChoice{.variant = v->name, .isa = v->isa};
}

// A variant's integer parameter (`fallback` when it has none).
int int_param(const kernels::VariantSpec& v, const std::string& name, int fallback) {
  auto it = v.params.find(name);
  if (it == v.params.end()) return fallback;
  int out = fallback;
  std::from_chars(it->second.data(), it->second.data() + it->second.size(), out);
  return out;
}

// kernel.<kernel>.variant=auto keeps the engine's own stored-weight kernels: false.
bool names_a_variant(const Config& knobs, std::string_view kernel) {
  const auto value = knobs.get(fmt::format("kernel.{}.variant", kernel));
  return value.has_value() && std::string_view(*value) != "auto";  // unset or unknown: resolve says so
}

Result<GemmVariant> gemm_variant(const Config& knobs) {
  RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* v, resolve_variant(knobs, "gemm"));
  auto param = [&](const char* name) -> std::string_view {
    auto it = v->params.find(name);
    return it == v->params.end() ? std::string_view() : std::string_view(it->second);
  };
  const auto precision = gemm::parse_precision(param("precision"));
  const auto algo = gemm::parse_algo(param("algo"));
  if (!precision || !algo)
    return internal_error("kernel gemm variant {}: params precision '{}', algo '{}' are not a precision and algorithm",
                          v->name, param("precision"), param("algo"));
  return GemmVariant{.variant = v->name, .precision = *precision, .algo = *algo};
}

}  // namespace

Result<KernelChoice> resolve_kernel(const Config& knobs, std::string_view kernel) { return resolve(knobs, kernel); }

std::string_view embedding_kernel_name(kernels::TableType type) {
  switch (type) {
    case kernels::TableType::kF32: return "embedding_f32";
    case kernels::TableType::kF16: return "embedding_f16";
    case kernels::TableType::kBF16: return "embedding_bf16";
    case kernels::TableType::kQ8_0: return "embedding_q8_0";
  }
  return "embedding_f32";
}

Result<ProjectionKernels> projection_kernels_from(const Config& knobs) {
  ProjectionKernels k;
  if (names_a_variant(knobs, "gemv")) {
    RECUR_ASSIGN_OR_RETURN(k.gemv, resolve(knobs, "gemv"));
  }
  if (names_a_variant(knobs, "gemm")) {
    RECUR_ASSIGN_OR_RETURN(k.gemm, gemm_variant(knobs));
  }
  RECUR_ASSIGN_OR_RETURN(k.gemm_w8a8, resolve(knobs, "gemm_w8a8"));
  RECUR_ASSIGN_OR_RETURN(k.options, gemm::options_from_config(knobs));
  const gemm::Options defaults;
  const bool tiling_set = k.options.algo != defaults.algo || k.options.kc != defaults.kc || k.options.mc != defaults.mc;
  if (tiling_set && active_isa() < Isa::kAvx512)
    return unsupported("kernel.gemm.algo={}, kernel.gemm.kc={}, kernel.gemm.mc={}: these pick between the dot and the "
                       "tiled algorithm and tile it, and the tiled one needs AVX-512 (this machine runs {}): leave "
                       "them at auto, 256, 120",
                       gemm::algo_name(k.options.algo), k.options.kc, k.options.mc, isa_name(active_isa()));
  if (k.gemm && k.options.algo != gemm::Algo::kAuto && k.options.algo != k.gemm->algo)
    return invalid_argument("kernel.gemm.algo={} contradicts kernel.gemm.variant={} (algorithm {}): set one of them",
                            gemm::algo_name(k.options.algo), k.gemm->variant, gemm::algo_name(k.gemm->algo));
  if (k.gemm) k.options.algo = k.gemm->algo;
  return k;
}

Result<EngineKernels> engine_kernels_from(const Config& knobs, bool attention, bool experts, bool mla) {
  EngineKernels k;
  RECUR_ASSIGN_OR_RETURN(k.rmsnorm, resolve(knobs, "rmsnorm"));
  RECUR_ASSIGN_OR_RETURN(k.rmsnorm_residual, resolve(knobs, "rmsnorm_residual"));
  RECUR_ASSIGN_OR_RETURN(k.swiglu, resolve(knobs, "swiglu"));
  if (attention) {
    RECUR_ASSIGN_OR_RETURN(k.rope, resolve(knobs, "rope"));
    RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* decode, resolve_variant(knobs, "attention_decode"));
    k.attention_decode = {.variant = decode->name, .isa = decode->isa};
    k.attention_decode_split_k = int_param(*decode, "split_k", 1);
    RECUR_ASSIGN_OR_RETURN(k.attention_prefill, resolve(knobs, "attention_prefill"));
  }
  if (experts) {
    RECUR_ASSIGN_OR_RETURN(k.route_topk, resolve(knobs, "route_topk"));
  }
  for (kernels::TableType t : {kernels::TableType::kF32, kernels::TableType::kF16, kernels::TableType::kBF16,
                               kernels::TableType::kQ8_0}) {
    RECUR_ASSIGN_OR_RETURN(k.embedding[size_t(t)], resolve(knobs, embedding_kernel_name(t)));
  }
  RECUR_ASSIGN_OR_RETURN(k.projections, projection_kernels_from(knobs));
  if (mla) {
    RECUR_ASSIGN_OR_RETURN(k.mla_decode, resolve(knobs, "mla_decode"));
    RECUR_ASSIGN_OR_RETURN(k.mla_prefill, resolve(knobs, "mla_prefill"));
  }
  return k;
}

Result<std::optional<std::string>> explicit_variant(const Config& knobs, std::string_view kernel) {
  RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* v, resolve_variant(knobs, kernel, false));
  if (v == nullptr) return std::optional<std::string>();
  return std::optional<std::string>(v->name);
}

}  // namespace recur
