// Weight: a view of one 2-d weight matrix (or 1-d vector) inside a model file, in its stored
// type, with the operations the forward pass needs: dequantize a row, and y = W x.
//
// Layout follows GGUF: dims {cols, rows}, rows contiguous; a [out, in] matrix has rows = out.
// Supported storage: F32, F16, BF16, Q8_0 (blocks of 32 int8 with an fp16 scale), and W8A8:
// I8 with an F32 <name>.scale per row (engine/w8a8.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/status.h"
#include "engine/gguf.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_amx.h"

namespace recur {

class ThreadPool;

struct Weight {
  std::string name;
  gguf::TensorType type = gguf::TensorType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const std::byte* data = nullptr;
  // W8A8 (type I8): each row's scale, and the int8 kernels' compensation 128 sum_c q[r, c] over
  // comp_cols columns (recomputed per call if the view's columns changed since).
  const float* scale = nullptr;
  const int32_t* comp = nullptr;
  int64_t comp_cols = 0;
  std::shared_ptr<const void> comp_owner;
  // Q8_0 or F16 regrouped into 16-row groups (gemm::WeightFormat::kQ8_0R16 / kF16R16,
  // regroup_weight): data then points into memory that `storage` keeps alive (or the model
  // owns), not into the file.
  bool regrouped = false;
  std::shared_ptr<const void> storage;
  // Q8_0 also repacked into AMX tiles at load (kernel.gemm.amx, attach_amx_tiles): matmul runs
  // m >= kAmxMinTokens on them, on `amx_backend`, with the bits of the stored layout's prefill.
  // Views of other rows or columns (tensor-parallel shards) drop it.
  std::shared_ptr<const gemm::AmxQ8Weights> amx;
  gemm::TileBackend amx_backend = gemm::TileBackend::kEmulator;

  size_t row_bytes() const;
  // Row r as fp32 into out[cols].
  void dequantize_row(int64_t r, float* out) const;
};

// Binds tensor `name` of `file`, checking it has the expected shape ({cols} or {cols, rows});
// errors name the tensor, the shape found and the shape expected.
Result<Weight> bind_weight(const gguf::File& file, const std::string& name, int64_t rows, int64_t cols);

// How Q8_0 and F16 weights meet fp32 activations when the caller does not pass the knobs
// kernel.gemm.q8_0_activations and kernel.gemm.f16_activations: their defaults (docs/gemm.md,
// "Q8_0 activations", "F16 activations").
inline constexpr gemm::Activations kDefaultActivations{gemm::Q8Activations::kQ8_0, gemm::F16Activations::kF16};

// y[m, rows] = x[m, cols] W^T: m activation rows (tokens) against the stored weights, W rows
// split statically over the pool (results never depend on the thread count); with no pool, on
// this thread. act applies to Q8_0 and F16 weights only; W8A8 weights quantize x per row to int8.
void matmul(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool,
            gemm::Activations act = kDefaultActivations);
// y[rows] = W x[cols]: matmul with m = 1.
inline void matvec(const Weight& w, const float* x, float* y, ThreadPool* pool,
                   gemm::Activations act = kDefaultActivations) {
  matmul(w, x, 1, y, pool, act);
}
inline void matvec(const Weight& w, const float* x, float* y, ThreadPool& pool) { matvec(w, x, y, &pool); }

// Rows [r0, r1) of w as a view (no copy): the column-parallel shard of a weight. For a
// regrouped weight whose bounds are not multiples of 16, a copy of the rows in row form.
Weight weight_rows(const Weight& w, int64_t r0, int64_t r1);

// Q8_0 or F16 weights regrouped into 16-row groups at `into` (row_bytes() * rows bytes), the
// view of them; errors name the tensor unless it is Q8_0 or F16 with rows % 16 == 0
// (gemm::repack_q8_0_r16, gemm::repack_f16_r16).
Result<Weight> regroup_weight(const Weight& w, std::byte* into);
// The fewest tokens a matmul runs on AMX tiles: one full A tile. Fewer (decode, batched decode)
// keep the GEMV / small-M kernels, which are bound by reading the weights.
inline constexpr int64_t kAmxMinTokens = 16;
// Whether attach_amx_tiles takes w: Q8_0 with whole blocks and no tiles yet.
bool amx_tileable(const Weight& w);
// w's rows (read before any regrouping) repacked into AMX tiles (gemm::AmxQ8Weights: 36 bytes per
// 32 weights) and attached, to run on `backend`; errors name the tensor.
Status attach_amx_tiles(Weight& w, gemm::TileBackend backend);
// Whether regroup_weight takes w.
bool regroupable(const Weight& w);
// Row r of a regrouped weight in the file's row form, into out[row_bytes()].
void ungroup_row(const Weight& w, int64_t r, std::byte* out);

}  // namespace recur
