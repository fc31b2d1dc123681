// The qwen3next architecture in llama.cpp's GGUF layout (Qwen3-Next-80B-A3B and its shape):
// gated DeltaNet layers, with a gated full-attention layer every full_attention_interval layers
// (llama.cpp: layer i is recurrent unless (i + 1) % interval == 0), each followed by Qwen2-MoE's
// FFN (softmax router, top-k renormalised, a shared expert scaled by sigmoid(ffn_gate_inp_shexp x)).
// Per layer l, tensor blk.l.<name>:
//   both: attn_norm, post_attention_norm (the norm before the FFN: Qwen's post_attention_layernorm);
//   gated DeltaNet: attn_qkv ([q of every key head | k | v], llama.cpp's converter reorders the
//     HF in_proj_qkvz so), attn_gate (z), ssm_conv1d ({d_conv, 2 HK K + HV V}: one depthwise
//     convolution over q, k and v), ssm_ba (HF's in_proj_ba as is: per key head, its G = HV / HK
//     beta logits then its G decay logits), ssm_a (-exp(A_log), [HV]), ssm_dt.bias ([HV]),
//     ssm_norm ([V], the gated RMSNorm's weight, not zero-centred), ssm_out;
//   attention: attn_q ([q_h ; gate_h] per head: 2 head_dim rows each), attn_k, attn_v,
//     attn_q_norm, attn_k_norm, attn_output.
// Norm weights other than ssm_norm hold 1 + w (the converter adds Qwen's zero-centred offset),
// so they apply as stored. Keys: qwen2moe's MoE keys, ssm.conv_kernel, ssm.state_size (K),
// ssm.group_count (HK), ssm.time_step_rank (HV), ssm.inner_size (HV V), full_attention_interval,
// rope.dimension_count (the rotated dims of each head: partial NeoX RoPE).
//
// The DeltaNet layer is the KDA mixer (blocks/kda_mixer.cc) with one decay per head broadcast over
// K (kda_scalar_decay: the decay rows gathered from ssm_ba, dt_bias widened at load) and a
// SiLU-gated norm (kda_gate_silu); the attention layer is the attention mixer with the output
// gate (attn_output_gate) and partial rotary. The legacy fused ssm_in of early converters is
// refused by name.
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "engine/architectures.h"
#include "engine/transformer.h"

namespace recur {

// The architecture row's own keys (architectures.h).
Status read_qwen3next_keys(const ArchKeys& k, ModelConfig& c);
void write_qwen3next_keys(const ModelConfig& c, gguf::Writer& w);
// What only qwen3next requires of a config: the layer pattern k...ka (an interval), experts with
// the shared expert, an even rotary width within the head (ModelConfig::validate calls it).
Status validate_qwen3next(const ModelConfig& c);
// The rotated dims of each attention head in the released model (partial_rotary_factor 0.25): a
// quarter of the head, even, at least 2; what synthetic files use.
inline int qwen3next_rope_dims(int head_dim) { return head_dim / 8 * 2 > 2 ? head_dim / 8 * 2 : 2; }

class Qwen3NextModel final : public TransformerModel {
 public:
  static Result<std::unique_ptr<Qwen3NextModel>> from_file(gguf::File file, const ModelLoadOptions& options = {});

 private:
  Result<std::unique_ptr<Session>> reference_session(int max_tokens) const override;
  std::vector<std::vector<float>> f32_;  // A_log and the widened dt_bias, which L's weights view
};

}  // namespace recur
