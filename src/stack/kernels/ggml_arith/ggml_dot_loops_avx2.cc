// ggml_arith's dot loops with AVX2/FMA/F16C (ggml_dot_loops.h): the lanes as vector fmas, the
// fp16 widening by F16C (exact, as core's fp16_to_fp32).
#include <immintrin.h>

#include "kernels/ggml_arith/ggml_dot_loops.h"

namespace recur::ggml_arith {

namespace {
struct WidenF16c {
  float operator()(uint16_t h) const { return _cvtsh_ss(h); }
};
}  // namespace

const DotLoops kDotLoopsAvx2 = loops::make_dot_loops(WidenF16c{});

}  // namespace recur::ggml_arith
