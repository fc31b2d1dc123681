// Projection: one weight matrix of the forward pass (or a tensor-parallel shard of one), ready
// for y = W x at the matmul precision the config chooses (knob kernel.gemm.precision):
//
//   f32                                  fp32 activations against the stored weights (matmul:
//                                        F32/F16/BF16/Q8_0 read in place; Q8_0 and F16 meet activations
//                                        as kernel.gemm.{q8_0,f16}_activations say) — the default
//   bf16, bf16x3, bf16x6 on BF16 weights x rounded to bf16 or split into 2 / 3 bf16 parts, W read
//                                        in place (gemm::gemm_stored_bf16: W is exactly bf16,
//                                        so only x's parts matter)
//   any other (precision, storage)       weights widened to fp32 and packed once for that
//                                        precision (gemm::PackedWeights; bf16 rounds W too,
//                                        bf16x3 splits both operands), then gemm()
//
// The registered kernels' variant knobs (engine_kernels.h ProjectionKernels) pick beside that:
// kernel.gemv.variant (not auto) runs M = 1 products of F32 row-form weights at f32 through the
// registered gemv at that variant; kernel.gemm.variant (not auto) runs M > 1 products through the
// registered gemm at its precision and algorithm (weights also widened and packed for it);
// kernel.gemm.{algo,kc,mc} reach every packed gemm() call. Each call's "matvec" zone names the
// kernel and variant that ran (kernel=gemv|gemm|gemm_w8a8 variant=...; the stored kernels:
// kernel=stored, and requested=<variant> where a requested gemv could not run on the weights).
//
// Immutable after create(); apply() may run on several threads at once (per-thread scratch).
#pragma once

#include <memory>
#include <optional>

#include "core/status.h"
#include "engine/engine_kernels.h"
#include "engine/ggml_matmul.h"
#include "engine/tensor_parallel.h"
#include "engine/weights.h"
#include "kernels/gemm/gemm.h"

namespace recur {

class ThreadPool;

// How a projection multiplies besides its precision: the activation forms of the stored kernels
// and the registered kernels' variants (engine_kernels.h).
struct ProjectionForm {
  gemm::Activations act = kDefaultActivations;
  ProjectionKernels kernels;
  // engine.ggml_arithmetic: F32 and F16 weights at f32 precision multiply in ggml's order
  // (matmul_ggml), ahead of the kernel variants; other storage types keep the paths above.
  std::optional<GgmlMatmul> ggml;
};

class Projection {
 public:
  Projection() = default;
  // `w` as it is (a view into the model file, or rows of one). act: the knobs
  // kernel.gemm.q8_0_activations and kernel.gemm.f16_activations (gemm::activations_from_config)
  // for Q8_0 and F16 weights at f32.
  static Result<Projection> create(const Weight& w, gemm::Precision precision,
                                   gemm::Activations act = kDefaultActivations);
  // Copied columns (a row-parallel shard); the projection keeps the copy alive.
  static Result<Projection> create(std::unique_ptr<OwnedWeight> owned, gemm::Precision precision,
                                   gemm::Activations act = kDefaultActivations);
  // The same with the registered kernels' variants (the forward's projections).
  static Result<Projection> create(const Weight& w, gemm::Precision precision, const ProjectionForm& form);
  static Result<Projection> create(std::unique_ptr<OwnedWeight> owned, gemm::Precision precision,
                                   const ProjectionForm& form);

  // y[m, rows] = x[m, cols] W^T for m activation rows (tokens); pool may be null (runs on the
  // caller). Each output row is what the m = 1 call on that x row gives, up to the kernels'
  // summation order for m > 8 (docs/gemm.md).
  void apply(const float* x, int64_t m, float* y, ThreadPool* pool) const;
  // y[rows] = W x[cols].
  void apply(const float* x, float* y, ThreadPool* pool) const { apply(x, 1, y, pool); }
  const Weight& weight() const { return view_; }
  int64_t rows() const { return view_.rows; }

 private:
  // The registered gemv (M = 1) and gemm (M > 1) paths, when their knobs name a variant.
  void apply_gemv(const float* x, float* y, ThreadPool* pool) const;
  void apply_gemm(const float* x, int64_t m, float* y, ThreadPool* pool) const;

  Weight view_;
  std::unique_ptr<OwnedWeight> owned_;
  std::optional<gemm::PackedWeights> packed_;
  std::optional<gemm::PackedWeights> gemm_packed_;  // kernel.gemm.variant's precision (M > 1)
  gemm::Precision precision_ = gemm::Precision::kF32;
  gemm::Activations act_ = kDefaultActivations;
  ProjectionKernels kernels_;
  std::optional<GgmlMatmul> ggml_;
};

}  // namespace recur
