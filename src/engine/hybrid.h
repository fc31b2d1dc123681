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
#include <vector>

#include "engine/model.h"
#include "engine/weights.h"

namespace recur {

struct HybridLayerWeights {
  bool kda = false;
  Weight attn_norm, ffn_norm;
  // attention layers
  Weight wq, wk, wv, wo;
  // KDA layers (wo shared with attention: the projection back to dim)
  Weight conv_q, conv_k, conv_v, wf, a_log, dt_bias, wb, out_gate, out_norm;
  // MLP: dense, or router + experts (+ shared expert)
  Weight w_gate, w_up, w_down;
  Weight router;
  std::vector<Weight> exp_gate, exp_up, exp_down;
  Weight sh_gate, sh_up, sh_down;
};

class HybridModel final : public Model {
 public:
  static Result<std::unique_ptr<HybridModel>> from_file(gguf::File file);

  const ModelConfig& config() const override { return config_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  // A session is a batch of one sequence (hybrid_batch.h); engine.numerics=f64_reference gives
  // the float64 reference session instead, which new_batch refuses (it runs one sequence).
  Result<std::unique_ptr<Session>> new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const override;
  Result<std::unique_ptr<Batch>> new_batch(ThreadPool& pool, const BatchOptions& options,
                                           const Config& knobs) const override;
  uint64_t weight_bytes_per_token() const override { return decode_weight_bytes(file_, config_); }
  const gguf::File& file() const { return file_; }

  Weight token_embedding, output_norm, output;
  std::vector<HybridLayerWeights> layers;

 private:
  gguf::File file_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

}  // namespace recur
