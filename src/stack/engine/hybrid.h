// The hybrid architecture: KDA linear-attention layers and full-attention (GQA, RoPE) layers
// in a repeating pattern (config.layer_pattern, default "kkka"), each followed by a dense
// SwiGLU or a top-k MoE MLP with an optional shared expert, and an LM head (tied or not).
//
// A KDA layer, for one token (h = RMSNorm(x)):
//   q, k, v   = Wq h, Wk h, Wv h, each through a short causal depthwise convolution + SiLU
//   g_raw, b  = Wf h [HV*K], Wb h [HV]; gate g = -exp(A_log) softplus(g_raw + dt_bias)
//   o         = KDA(q, k, v, g, b) per value head (kernels/kda), state [HV, K, V]
//   o_h       = RMSNorm(o_h) * w_norm * sigmoid(Wog h)_h       (gated RMSNorm per head)
//   x        += Wo o
// Tensor names are listed in docs/engine.md.
#pragma once

#include <memory>

#include "engine/transformer.h"

namespace recur {

// A loader: the hybrid is a layer pattern of the one forward pass (transformer.h, forward.h).
// engine.numerics=f64_reference gives the float64 reference session
// (reference/hybrid_reference.h), which new_batch refuses (it runs one sequence).
class HybridModel final : public TransformerModel {
 public:
  // Binds an already parsed file, regrouping Q8_0 / F16 projections as `options` say.
  static Result<std::unique_ptr<HybridModel>> from_file(gguf::File file, const ModelLoadOptions& options = {});

 private:
  Result<std::unique_ptr<Session>> reference_session(int max_tokens) const override;
};

}  // namespace recur
