// Stacked expert tensors (GGUF's ffn_*_exps, {cols, rows, experts}) bound as one 2-d Weight per
// expert; W8A8 (I8) stacks get their per-row scales attached (w8a8.h).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/weights.h"

namespace recur {

// Errors name the tensor, its shape and the shape expected.
Result<std::vector<Weight>> bind_experts(const gguf::File& f, const std::string& name, int experts, int64_t rows,
                                         int64_t cols);

}  // namespace recur
