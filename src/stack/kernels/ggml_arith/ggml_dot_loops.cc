// ggml_arith's dot loops for any x86-64 (ggml_dot_loops.h), and the choice between the builds.
#include "kernels/ggml_arith/ggml_dot_loops.h"

#include "core/convert.h"
#include "core/cpu_features.h"

namespace recur::ggml_arith {

namespace {
struct WidenScalar {
  float operator()(uint16_t h) const { return fp16_to_fp32(h); }
};
}  // namespace

const DotLoops kDotLoopsScalar = loops::make_dot_loops(WidenScalar{});

const DotLoops& dot_loops() { return active_isa() >= Isa::kAvx2 ? kDotLoopsAvx2 : kDotLoopsScalar; }

}  // namespace recur::ggml_arith
