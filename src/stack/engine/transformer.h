// TransformerModel: what every architecture recur runs is made of, and the one forward pass
// they share (forward.h). An architecture is a loader (llama.h, hybrid.h) that binds its tensor
// names into these layers: a layer is a token mixer (full attention, or KDA when `kda`) and an
// FFN (dense SwiGLU, or a top-k MoE with an optional shared expert). Llama is the layer pattern
// "all attention, no experts".
//
// Immutable after load; may be shared by threads.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/aligned_buffer.h"
#include "engine/model.h"
#include "engine/weights.h"

namespace recur {

struct LayerWeights {
  bool kda = false;  // the token mixer: KDA (hybrid.h) or attention
  Weight attn_norm, ffn_norm;
  // attention (and KDA's wo: the projection back to dim)
  Weight wq, wk, wv, wo;
  // KDA only
  Weight conv_q, conv_k, conv_v, wf, a_log, dt_bias, wb, out_gate, out_norm;
  // Low-rank KDA gates (kimi-linear): f = wf (f_b) of wf_a (f_a) h, the output gate likewise;
  // absent (data null) when wf and out_gate take h directly.
  Weight wf_a, out_gate_a;
  // FFN: dense, or router + experts (+ shared expert)
  Weight w_gate, w_up, w_down;
  Weight router;
  std::vector<Weight> exp_gate, exp_up, exp_down;
  Weight sh_gate, sh_up, sh_down;
  // Architecture features (model_config.h; unset: data null): q/k/v biases, per-head QK RMSNorm
  // weights [head_dim], the shared expert's sigmoid gate [1, dim].
  Weight bq, bk, bv, q_norm, k_norm, sh_gate_inp;
  Weight post_attn_norm, post_ffn_norm;  // sandwich norms (post_norms)
  Weight exp_probs_b;  // deepseek2: the router's selection bias [n_experts] (absent: no bias)
  // MLA attention (deepseek2.h, blocks/mla_mixer.cc) when `mla`: q from wq or wq_a -> q_a_norm
  // -> wq_b; wkv_a gives the latent and the shared RoPE key; wk_b, wv_b are F32 copies the model
  // owns ([heads, rank, nope] and [heads, v_dim, rank], kernels/mla/mla.h); wo as attention's.
  bool mla = false;
  Weight wq_a, q_a_norm, wq_b, wkv_a, kv_a_norm, wk_b, wv_b;
};

class TransformerModel : public Model {
 public:
  const ModelConfig& config() const override { return config_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  uint64_t weight_bytes_per_token() const override { return decode_weight_bytes(file_, config_); }
  // A session is the batched forward over one sequence (batch_session.h); with
  // engine.numerics=f64_reference, the architecture's float64 reference session instead.
  Result<std::unique_ptr<Session>> new_session(ThreadPool& pool, int max_tokens,
                                               const EngineOptions& options) const override;
  // The one batched forward (forward.h).
  Result<std::unique_ptr<Batch>> new_batch(ThreadPool& pool, const BatchOptions& batch,
                                           const EngineOptions& options) const override;
  using Model::new_batch;  // the Config overloads
  using Model::new_session;
  const gguf::File& file() const { return file_; }

  Weight token_embedding, output_norm, output;
  // Llama 3 RoPE scaling: pair i's angle divided by rope_freqs[i] ([head_dim / 2]; data null: none).
  Weight rope_freqs;
  std::vector<LayerWeights> layers;

 protected:
  // Binds the file, reads its config (refusing another architecture than `arch`) and tokenizer,
  // and the embedding, final norm and LM head.
  Status bind_common(gguf::File file, Arch arch);
  // Regroups every Q8_0 / F16 projection (as `options` say; not the embedding table, a tied head
  // or a MoE router) into 16-row groups (docs/engine.md "Weight layout"), releasing each
  // source's file pages once its copy exists: the peak is the model plus one matrix.
  // Before that, with kernel.gemm.amx on or emulate, repacks the same Q8_0 projections into AMX
  // tiles as well (attach_amx_tiles: +1.06x their bytes; decode keeps the rows or groups).
  Status regroup_weights(const ModelLoadOptions& options);
  // Numerics::kF64Reference: the float64 reference session, or why there is none.
  virtual Result<std::unique_ptr<Session>> reference_session(int max_tokens) const = 0;

  gguf::File file_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;

 private:
  // fn on each projection regrouping and the AMX tiles consider (see regroup_weights).
  void for_each_projection(const std::function<void(Weight&)>& fn);
  Status attach_amx_tiles(const ModelLoadOptions& options);
  AlignedBuffer regrouped_;
};

}  // namespace recur
