// ggml's mul_mat for F32 and F16 weights (engine.ggml_arithmetic, issue #27): llama.cpp c392e50's
// CPU bits for y = x W^T. F16 weights meet the activations rounded to f16 (ggml's vec_dot_type);
// each output is one ggml_arith dot: llamafile's tinyBLAS tile (ggml_arith::tile_dot_*) where
// ggml hands the product to it (ggml_arith::tiles_take: several tokens, k a multiple of the
// vector width, rows a multiple of 4), else ggml's vec_dot loop (ggml_arith::vec_dot_*).
// mul_mat_id (the MoE experts) never takes tinyBLAS: GgmlMatmul::vec_dot_only.
//
// Regrouped F16 weights (engine.weight_layout=r16) are read a row at a time back in row form,
// so the load's layout does not change the bits. Other storage types are not ggml's F16/F32
// arithmetic: Q8_0 has kernel.gemm.q8_0_activations=q8_0_ggml; BF16 keeps recur's order (ggml
// runs AVX512-BF16 dot instructions on x rounded to bf16, which this scalar emulation does not
// reproduce).
#pragma once

#include <cstdint>

#include "engine/weights.h"
#include "kernels/ggml_arith/ggml_arith.h"

namespace recur {

class ThreadPool;

struct GgmlMatmul {
  ggml_arith::GgmlIsa isa = ggml_arith::GgmlIsa::kAvx512;
  bool vec_dot_only = false;  // ggml_mul_mat_id (routed experts): the vec_dot loop at any token count
};

// Whether matmul_ggml computes w: F32 or F16 (regrouped or not).
bool ggml_matmul_takes(const Weight& w);

// y[m, rows] = x[m, cols] W^T in ggml's order for F32 / F16 w (ggml_matmul_takes). Whole outputs
// per thread: the bits do not depend on the pool.
void matmul_ggml(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool, const GgmlMatmul& g);

// matmul_ggml where it takes w, else recur's matmul with `act` (Q8_0: q8_0_ggml when set).
void matmul_ggml_or_stored(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                           const GgmlMatmul& g, gemm::Activations act);

// llama.cpp's last layer runs its FFN on the output tokens only (inp_out_ids), so tinyBLAS's
// choice there depends on how many tokens want logits, not on the rows recur computes. While an
// instance lives, this thread's matmul_ggml calls decide tile or vec_dot as for `tokens` tokens
// (each output's value depends only on that choice, so the extra rows are harmless).
class GgmlTileTokensScope {
 public:
  explicit GgmlTileTokensScope(int64_t tokens);
  ~GgmlTileTokensScope();
  GgmlTileTokensScope(const GgmlTileTokensScope&) = delete;
  GgmlTileTokensScope& operator=(const GgmlTileTokensScope&) = delete;

 private:
  int64_t saved_;
};

}  // namespace recur
