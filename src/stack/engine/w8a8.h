// W8A8 weights in model files: an I8 tensor <name> of [rows, cols] (or [experts, rows, cols])
// plus an F32 tensor <name>.scale of [rows] (or [experts, rows]), one symmetric scale per output
// channel: w[r, c] ~= scale[r] * q[r, c], |q| <= 127 (docs/engine.md, "W8A8").
//
// The reader side (attach_w8a8) finds and checks the scale companion of a bound I8 Weight and
// computes the int8 kernels' per-row compensation once (gemm::w8a8_compensation); the writer
// side (quantize_w8a8) is what `recur model new --dtype w8a8` stores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/weights.h"

namespace recur {

// Gives w (type I8, bound from tensor `t` of `file`, `count` stacked matrices of w.rows rows, w
// being matrix `index`) its scales and compensation. Errors name the tensor and its info byte:
// a missing <name>.scale, a scale that is not F32, of the wrong shape, or non-finite/negative.
Status attach_w8a8(const gguf::File& file, const gguf::TensorInfo& t, Weight& w, int64_t index = 0,
                   int64_t count = 1);

// The compensation of w's rows over its current columns, computed now (for a view whose columns
// changed after binding, e.g. a row-parallel column shard).
void refresh_w8a8_compensation(Weight& w);

// y[m, w.rows] = x[m, w.cols] W^T for an attached W8A8 weight: x quantized per row to int8
// (scale amax / 127), exact int8 dots (vpdpbusd / vpmaddubsw / scalar), scaled back by s_x s_w.
// False where the kernel refuses (non-finite x, cols > 65536): the caller then dequantizes.
bool matmul_w8a8(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool);

// rows x cols fp32 (row-major) quantized per row: scales[r] = amax / 127, q = round(w / s)
// (quantize_int8_rows' bits). Returns the I8 bytes and fills `scales` (rows floats).
Result<std::vector<std::byte>> quantize_w8a8(const float* w, int64_t rows, int64_t cols, std::vector<float>& scales);

}  // namespace recur
