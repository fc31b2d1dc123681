// The deepseek2 architecture in llama.cpp's GGUF layout (DeepSeek-V2, V2-Lite, V3 and their
// relatives): MLA attention (kernels/mla/mla.h) in every layer; the first
// leading_dense_block_count layers have a dense SwiGLU FFN, the rest a top-k MoE with shared
// experts and deepseek2's gating (model_config.h). Per layer l, tensor blk.l.<name>:
//   attn_norm, attn_q | attn_q_a + attn_q_a_norm + attn_q_b, attn_kv_a_mqa, attn_kv_a_norm,
//   attn_k_b + attn_v_b (or the unsplit attn_kv_b of older files), attn_output, ffn_norm,
//   ffn_{gate,up,down} | ffn_gate_inp, exp_probs_b.bias (optional), ffn_{gate,up,down}_exps,
//   ffn_{gate,up,down}_shexp.
// For one token (h = RMSNorm(x)), each head split as [nope ; rope]:
//   q          = Wq h  or  Wq_b RMSNorm(Wq_a h)                        [heads, nope + rope]
//   [c ; k_r]  = Wkv_a h;  c = RMSNorm(c) (kv_a_norm); k_r, q_rope RoPE'd (YaRN when scaled)
//   o_h        = MLA(q_h, cached [c ; k_r]) with W_UK, W_UV from attn_k_b / attn_v_b
//   x         += Wo o
// The cache holds [c ; k_r] per token (kv_lora_rank + rope values). attn_k_b / attn_v_b are
// widened to F32 once at load (the MLA kernel reads them per head).
// engine.tp splits the heads (blocks/mla_mixer.cc), engine.layer_split puts each layer whole on
// one rank, engine.ep splits the experts (routed by this gating), and sequence-state export moves
// the latent caches (sequence_state.h).
#pragma once

#include <memory>
#include <vector>

#include "engine/transformer.h"

namespace recur {

class Deepseek2Model final : public TransformerModel {
 public:
  static Result<std::unique_ptr<Deepseek2Model>> from_file(gguf::File file, const ModelLoadOptions& options = {});

 private:
  Result<std::unique_ptr<Session>> reference_session(int max_tokens) const override;
  std::vector<std::vector<float>> mla_f32_;  // what each layer's wk_b / wv_b point into
};

// Binds layer `l`'s MLA tensors (prefix "blk.<l>.") into L, keeping the widened W_UK / W_UV in
// `storage` (whose vectors must outlive the model's use of L).
Status bind_mla_attention(const gguf::File& f, const ModelConfig& c, const std::string& prefix, LayerWeights& L,
                          std::vector<std::vector<float>>& storage);

}  // namespace recur
