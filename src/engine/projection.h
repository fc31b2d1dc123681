// Projection: one weight matrix of the forward pass (or a tensor-parallel shard of one), ready
// for y = W x at the matmul precision the config chooses (knob kernel.gemm.precision):
//
//   f32                                  fp32 activations against the stored weights (matvec:
//                                        F32/F16/BF16/Q8_0 read in place) — the default
//   bf16, bf16x3, bf16x6 on BF16 weights x rounded to bf16 or split into 2 / 3 bf16 parts, W read
//                                        in place (gemm::gemm_stored_bf16: W is exactly bf16,
//                                        so only x's parts matter)
//   any other (precision, storage)       weights widened to fp32 and packed once for that
//                                        precision (gemm::PackedWeights; bf16 rounds W too,
//                                        bf16x3 splits both operands), then gemm()
//
// Immutable after create(); apply() may run on several threads at once (per-thread scratch).
#pragma once

#include <memory>
#include <optional>

#include "core/status.h"
#include "engine/tensor_parallel.h"
#include "engine/weights.h"
#include "kernels/gemm/gemm.h"

namespace recur {

class ThreadPool;

class Projection {
 public:
  Projection() = default;
  // `w` as it is (a view into the model file, or rows of one).
  static Result<Projection> create(const Weight& w, gemm::Precision precision);
  // Copied columns (a row-parallel shard); the projection keeps the copy alive.
  static Result<Projection> create(std::unique_ptr<OwnedWeight> owned, gemm::Precision precision);

  // y[rows] = W x[cols]; pool may be null (runs on the caller).
  void apply(const float* x, float* y, ThreadPool* pool) const;
  const Weight& weight() const { return view_; }
  int64_t rows() const { return view_.rows; }

 private:
  Weight view_;
  std::unique_ptr<OwnedWeight> owned_;
  std::optional<gemm::PackedWeights> packed_;
  gemm::Precision precision_ = gemm::Precision::kF32;
};

}  // namespace recur
