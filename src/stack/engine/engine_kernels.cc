#include "engine/engine_kernels.h"

#include <fmt/format.h>

#include "kernels/registry.h"

namespace recur {

namespace {

Result<KernelChoice> resolve(const Config& knobs, std::string_view kernel) {
  const std::string knob = fmt::format("kernel.{}.variant", kernel);
  RECUR_ASSIGN_OR_RETURN(std::string value, knobs.get(knob));
  RECUR_ASSIGN_OR_RETURN(const kernels::KernelSpec* spec, kernels::KernelRegistry::global().lookup(kernel));
  const kernels::VariantSpec* v = nullptr;
  if (value == "auto") {
    v = spec->best_variant();
    if (v == nullptr) return unsupported("{}=auto: no variant of kernel {} runs on this machine", knob, kernel);
  } else {
    auto found = spec->lookup_variant(value);
    if (!found) return invalid_argument("{}={}: {}", knob, value, found.error().message());
    v = *found;
  }
  if (Status s = kernels::check_runnable(*v); !s) return unsupported("{}={}: {}", knob, value, s.error().message());
  return KernelChoice{.variant = v->name, .isa = v->isa};
}

}  // namespace

Result<EngineKernels> engine_kernels_from(const Config& knobs, bool attention, bool experts, bool mla) {
  EngineKernels k;
  RECUR_ASSIGN_OR_RETURN(k.rmsnorm, resolve(knobs, "rmsnorm"));
  RECUR_ASSIGN_OR_RETURN(k.rmsnorm_residual, resolve(knobs, "rmsnorm_residual"));
  RECUR_ASSIGN_OR_RETURN(k.swiglu, resolve(knobs, "swiglu"));
  if (attention) {
    RECUR_ASSIGN_OR_RETURN(k.rope, resolve(knobs, "rope"));
  }
  if (experts) {
    RECUR_ASSIGN_OR_RETURN(k.route_topk, resolve(knobs, "route_topk"));
  }
  if (mla) {
    RECUR_ASSIGN_OR_RETURN(k.mla_decode, resolve(knobs, "mla_decode"));
    RECUR_ASSIGN_OR_RETURN(k.mla_prefill, resolve(knobs, "mla_prefill"));
  }
  return k;
}

}  // namespace recur
