// The kimi-linear architecture in llama.cpp's GGUF layout (Kimi-Linear-48B-A3B and its shape):
// KDA layers and MLA layers in the pattern attention.head_count_kv gives (0 = KDA), each
// followed by deepseek2's FFN (leading dense layers, then MoE with exp_probs_b, shared experts,
// renormalized top-k times expert_weights_scale). Per layer l, tensor blk.l.<name>:
//   KDA: attn_q, attn_k, attn_v, ssm_conv1d_{q,k,v} ({d_conv, 1, channels} or with a trailing 1),
//        ssm_f_a + ssm_f_b (the low-rank decay projection), ssm_beta, ssm_a (-exp(A_log), as
//        llama.cpp's converter stores it), ssm_dt.bias, ssm_g_a + ssm_g_b (the low-rank output
//        gate), ssm_norm, attn_output;
//   MLA: deepseek2.h's names; the rope part of q and of the shared key is used without RoPE.
// The KDA layer is recur's hybrid KDA mixer (hybrid.h) with the low-rank gate projections; the
// MLA layer is deepseek2's mixer (blocks/mla_mixer.cc). recur's own `hybrid` layout is the same
// family with GQA + RoPE attention, full-rank gates and recur's tensor names (docs/engine.md).
// Every hybrid feature runs on it: engine.tp splits KDA and MLA heads, engine.layer_split puts
// each MLA layer whole on one rank, engine.ep splits the experts (routed by deepseek2's gating),
// and sequence-state export moves the KDA states and MLA latent caches (docs/engine.md).
#pragma once

#include <memory>
#include <vector>

#include "engine/transformer.h"

namespace recur {

class KimiLinearModel final : public TransformerModel {
 public:
  static Result<std::unique_ptr<KimiLinearModel>> from_file(gguf::File file, const ModelLoadOptions& options = {});

 private:
  Result<std::unique_ptr<Session>> reference_session(int max_tokens) const override;
  std::vector<std::vector<float>> f32_;  // MLA's W_UK / W_UV and KDA's A_log, which L's weights view
};

}  // namespace recur
