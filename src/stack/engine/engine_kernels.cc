#include "engine/engine_kernels.h"

#include <charconv>

#include <fmt/format.h>

#include "kernels/registry.h"

namespace recur {

namespace {

// The variant kernel.<kernel>.variant names: "auto" gives the best runnable one (null when
// `best` is false).
Result<const kernels::VariantSpec*> resolve_variant(const Config& knobs, std::string_view kernel, bool best) {
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
  RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* v, resolve_variant(knobs, kernel, true));
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

}  // namespace

Result<EngineKernels> engine_kernels_from(const Config& knobs, bool attention, bool experts) {
  EngineKernels k;
  RECUR_ASSIGN_OR_RETURN(k.rmsnorm, resolve(knobs, "rmsnorm"));
  RECUR_ASSIGN_OR_RETURN(k.rmsnorm_residual, resolve(knobs, "rmsnorm_residual"));
  RECUR_ASSIGN_OR_RETURN(k.swiglu, resolve(knobs, "swiglu"));
  if (attention) {
    RECUR_ASSIGN_OR_RETURN(k.rope, resolve(knobs, "rope"));
    RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* decode, resolve_variant(knobs, "attention_decode", true));
    k.attention_decode = {.variant = decode->name, .isa = decode->isa};
    k.attention_decode_split_k = int_param(*decode, "split_k", 1);
    RECUR_ASSIGN_OR_RETURN(k.attention_prefill, resolve(knobs, "attention_prefill"));
  }
  if (experts) {
    RECUR_ASSIGN_OR_RETURN(k.route_topk, resolve(knobs, "route_topk"));
  }
  return k;
}

Result<std::optional<std::string>> explicit_variant(const Config& knobs, std::string_view kernel) {
  RECUR_ASSIGN_OR_RETURN(const kernels::VariantSpec* v, resolve_variant(knobs, kernel, false));
  if (v == nullptr) return std::optional<std::string>();
  return std::optional<std::string>(v->name);
}

}  // namespace recur
