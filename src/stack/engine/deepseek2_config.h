// deepseek2's hyper-parameters in llama.cpp's GGUF keys (convert_hf_to_gguf.py's DeepseekV2Model,
// llama-model.cpp's LLM_ARCH_DEEPSEEK2), read into and written from ModelConfig:
//   deepseek2.attention.q_lora_rank (absent or 0: attn_q), .kv_lora_rank, .key_length_mla
//   (nope + rope; absent in pre-MLA-cache files, whose key_length is it), .value_length_mla
//   (else value_length), .rope.dimension_count (the rope part), .leading_dense_block_count,
//   .feed_forward_length (the leading dense layers' FFN), .expert_feed_forward_length,
//   .expert_count, .expert_used_count, .expert_shared_count, .expert_weights_scale,
//   .expert_weights_norm (default false), .expert_gating_func (1 softmax, 2 sigmoid; absent:
//   softmax), .rope.scaling.{type,factor,original_context_length,yarn_log_multiplier,
//   yarn_beta_fast,yarn_beta_slow}.
// The MLA files llama.cpp writes have head_count_kv 1, key_length kv_lora_rank + rope and
// value_length kv_lora_rank (the absorbed form runs as MQA over the latent); write does the same.
// Files without key_length_mla are the older form (ModelConfig::mla_unsplit_kv_b: attn_kv_b,
// per-head key/value lengths, head_count_kv = heads), which llama.cpp c392e50 reads; write
// writes it, with yarn_log_multiplier always (c392e50 requires it), when the config says so.
#pragma once

#include "core/status.h"
#include "engine/architectures.h"
#include "engine/gguf.h"
#include "engine/model_config.h"

namespace recur {

// The architecture table's read_keys / write_keys of the deepseek2 row: after the common keys
// (dim, layers, heads, context, eps, theta, vocab) are in `c`. The shared expert is
// expert_shared_count experts wide (shared_ffn_dim = count x expert_feed_forward_length).
Status read_deepseek2_keys(const ArchKeys& k, ModelConfig& c);
void write_deepseek2_keys(const ModelConfig& c, gguf::Writer& w);
// deepseek2's checks beyond ModelConfig::validate()'s common ones, which kimi-linear's MLA layers and MoE share.
Status validate_deepseek2(const ModelConfig& c);

// kimi-linear (llama.cpp's LLM_ARCH_KIMI_LINEAR): the MLA and MoE keys above under
// "kimi-linear.", plus attention.head_count_kv as a per-layer array (0 = KDA layer, which
// becomes layer_pattern), kda.head_dim and ssm.conv_kernel; KDA has head_count heads. Its MLA
// layers apply no RoPE and its top-k weights are always renormalized (llama.cpp's graph).
Status read_kimi_linear_keys(const ArchKeys& k, ModelConfig& c);
void write_kimi_linear_keys(const ModelConfig& c, gguf::Writer& w);

}  // namespace recur
