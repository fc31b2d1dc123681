#include "engine/layer_binding.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/w8a8.h"
#include "engine/weights.h"

namespace recur {

Status LayerTensors::operator()(Weight& w, const char* name, int64_t rows, int64_t cols) const {
  RECUR_ASSIGN_OR_RETURN(w, bind_weight(file_, prefix_ + name, rows, cols));
  return ok_status();
}

Status bind_attention_weights(const gguf::File& f, const ModelConfig& c, const std::string& p, LayerWeights& L) {
  const LayerTensors bind(f, p);
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  if (c.fused_qkv) {
    // Row views of the one tensor: q, then k, then v (llama.cpp's build_qkv split).
    Weight qkv;
    RECUR_RETURN_IF_ERROR(bind(qkv, "attn_qkv.weight", q_dim + 2 * kv_dim, c.dim));
    L.wq = weight_rows(qkv, 0, q_dim);
    L.wk = weight_rows(qkv, q_dim, q_dim + kv_dim);
    L.wv = weight_rows(qkv, q_dim + kv_dim, q_dim + 2 * kv_dim);
  } else {
    // attn_output_gate (qwen3next): each head's q rows, then its gate rows.
    RECUR_RETURN_IF_ERROR(bind(L.wq, "attn_q.weight", c.attn_output_gate ? 2 * q_dim : q_dim, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.wk, "attn_k.weight", kv_dim, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.wv, "attn_v.weight", kv_dim, c.dim));
  }
  RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, q_dim));
  if (c.attn_bias) {
    RECUR_RETURN_IF_ERROR(bind(L.bq, "attn_q.bias", 1, q_dim));
    RECUR_RETURN_IF_ERROR(bind(L.bk, "attn_k.bias", 1, kv_dim));
    RECUR_RETURN_IF_ERROR(bind(L.bv, "attn_v.bias", 1, kv_dim));
  }
  if (c.post_norms) RECUR_RETURN_IF_ERROR(bind(L.post_attn_norm, "post_attention_norm.weight", 1, c.dim));
  if (c.qk_norm) {
    RECUR_RETURN_IF_ERROR(bind(L.q_norm, "attn_q_norm.weight", 1, c.head_dim));
    RECUR_RETURN_IF_ERROR(bind(L.k_norm, "attn_k_norm.weight", 1, c.head_dim));
  }
  return ok_status();
}

Status bind_ffn_weights(const gguf::File& f, const ModelConfig& c, const std::string& p, int layer, LayerWeights& L) {
  const LayerTensors bind(f, p);
  if (c.post_norms) RECUR_RETURN_IF_ERROR(bind(L.post_ffn_norm, "post_ffw_norm.weight", 1, c.dim));
  if (c.is_dense_ffn_layer(layer)) {
    const int64_t width = layer < c.leading_dense_layers ? c.dense_ffn_dim : c.ffn_dim;
    if (c.fused_gate_up) {
      // phi3: ffn_up is [2 * ffn, dim], the gate's rows first (ggml_swiglu's halves).
      Weight gate_up;
      RECUR_RETURN_IF_ERROR(bind(gate_up, "ffn_up.weight", 2 * width, c.dim));
      L.w_gate = weight_rows(gate_up, 0, width);
      L.w_up = weight_rows(gate_up, width, 2 * width);
    } else {
      RECUR_RETURN_IF_ERROR(bind(L.w_gate, "ffn_gate.weight", width, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.w_up, "ffn_up.weight", width, c.dim));
    }
    return bind(L.w_down, "ffn_down.weight", c.dim, width);
  }
  RECUR_RETURN_IF_ERROR(bind(L.router, "ffn_gate_inp.weight", c.n_experts, c.dim));
  if (f.tensor(p + "exp_probs_b.bias") != nullptr)
    RECUR_RETURN_IF_ERROR(bind(L.exp_probs_b, "exp_probs_b.bias", 1, c.n_experts));
  RECUR_ASSIGN_OR_RETURN(L.exp_gate, bind_experts(f, p + "ffn_gate_exps.weight", c.n_experts, c.ffn_dim, c.dim));
  RECUR_ASSIGN_OR_RETURN(L.exp_up, bind_experts(f, p + "ffn_up_exps.weight", c.n_experts, c.ffn_dim, c.dim));
  RECUR_ASSIGN_OR_RETURN(L.exp_down, bind_experts(f, p + "ffn_down_exps.weight", c.n_experts, c.dim, c.ffn_dim));
  if (!c.shared_expert) return ok_status();
  const int64_t shared = c.shared_width();
  RECUR_RETURN_IF_ERROR(bind(L.sh_gate, "ffn_gate_shexp.weight", shared, c.dim));
  RECUR_RETURN_IF_ERROR(bind(L.sh_up, "ffn_up_shexp.weight", shared, c.dim));
  RECUR_RETURN_IF_ERROR(bind(L.sh_down, "ffn_down_shexp.weight", c.dim, shared));
  if (c.shared_expert_gate) RECUR_RETURN_IF_ERROR(bind(L.sh_gate_inp, "ffn_gate_inp_shexp.weight", 1, c.dim));
  return ok_status();
}

}  // namespace recur
