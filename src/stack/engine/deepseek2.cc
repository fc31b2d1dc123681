#include "engine/deepseek2.h"

#include <fmt/format.h>

#include "engine/expert_weights.h"
#include "engine/layer_binding.h"
#include "engine/reference/mla_reference.h"

namespace recur {

namespace {

// An F32 Weight over `data` ([rows, cols], owned elsewhere).
Weight f32_weight(std::string name, const std::vector<float>& data, int64_t rows, int64_t cols) {
  return Weight{std::move(name), gguf::TensorType::kF32, rows, cols, reinterpret_cast<const std::byte*>(data.data())};
}

// The rows of each weight, widened one after another.
std::vector<float> widen(const std::vector<Weight>& ws) {
  std::vector<float> out;
  for (const Weight& w : ws) {
    const size_t at = out.size();
    out.resize(at + size_t(w.rows * w.cols));
    for (int64_t r = 0; r < w.rows; ++r) w.dequantize_row(r, out.data() + at + size_t(r * w.cols));
  }
  return out;
}

}  // namespace

Status bind_mla_attention(const gguf::File& f, const ModelConfig& c, const std::string& p, LayerWeights& L,
                          std::vector<std::vector<float>>& storage) {
  const int64_t H = c.n_heads, N = c.qk_nope_dim, E = c.qk_rope_dim, R = c.kv_lora_rank, V = c.v_head_dim;
  const LayerTensors bind(f, p);
  L.mla = true;
  if (c.q_lora_rank > 0) {
    RECUR_RETURN_IF_ERROR(bind(L.wq_a, "attn_q_a.weight", c.q_lora_rank, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.q_a_norm, "attn_q_a_norm.weight", 1, c.q_lora_rank));
    RECUR_RETURN_IF_ERROR(bind(L.wq_b, "attn_q_b.weight", H * (N + E), c.q_lora_rank));
  } else {
    RECUR_RETURN_IF_ERROR(bind(L.wq, "attn_q.weight", H * (N + E), c.dim));
  }
  RECUR_RETURN_IF_ERROR(bind(L.wkv_a, "attn_kv_a_mqa.weight", R + E, c.dim));
  RECUR_RETURN_IF_ERROR(bind(L.kv_a_norm, "attn_kv_a_norm.weight", 1, R));
  RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, H * V));
  std::vector<float> wk, wv;
  if (f.tensor(p + "attn_k_b.weight") != nullptr || f.tensor(p + "attn_kv_b.weight") == nullptr) {
    // llama.cpp's split: attn_k_b {nope, rank, heads} (W_UK transposed), attn_v_b {rank, v, heads}.
    RECUR_ASSIGN_OR_RETURN(std::vector<Weight> k_b, bind_experts(f, p + "attn_k_b.weight", int(H), R, N));
    RECUR_ASSIGN_OR_RETURN(std::vector<Weight> v_b, bind_experts(f, p + "attn_v_b.weight", int(H), V, R));
    wk = widen(k_b);
    wv = widen(v_b);
  } else {
    // Older files: attn_kv_b {rank, heads * (nope + v)}, each head's nope rows then its v rows.
    Weight kv_b;
    RECUR_RETURN_IF_ERROR(bind(kv_b, "attn_kv_b.weight", H * (N + V), R));
    const std::vector<float> all = widen({kv_b});
    wk.resize(size_t(H * R * N));
    wv.resize(size_t(H * V * R));
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t n = 0; n < N; ++n) wk[size_t((h * R + r) * N + n)] = all[size_t((h * (N + V) + n) * R + r)];
        for (int64_t v = 0; v < V; ++v) wv[size_t((h * V + v) * R + r)] = all[size_t((h * (N + V) + N + v) * R + r)];
      }
  }
  storage.push_back(std::move(wk));
  L.wk_b = f32_weight(p + "W_UK", storage.back(), H * R, N);
  storage.push_back(std::move(wv));
  L.wv_b = f32_weight(p + "W_UV", storage.back(), H * V, R);
  return ok_status();
}

Result<std::unique_ptr<Session>> Deepseek2Model::reference_session(int max_tokens) const {
  return new_mla_reference_session(file_, config_, max_tokens);
}

Result<std::unique_ptr<Deepseek2Model>> Deepseek2Model::from_file(gguf::File file, const ModelLoadOptions& options) {
  std::unique_ptr<Deepseek2Model> m(new Deepseek2Model());
  RECUR_RETURN_IF_ERROR(m->bind_common(std::move(file), Arch::kDeepseek2));
  const gguf::File& f = m->file_;
  const ModelConfig& c = m->config_;
  m->mla_f32_.reserve(size_t(2 * c.n_layers));  // wk_b / wv_b point into these vectors' buffers
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    auto bind = [&](Weight& w, const std::string& name, int64_t rows, int64_t cols) -> Status {
      RECUR_ASSIGN_OR_RETURN(w, bind_weight(f, p + name, rows, cols));
      return ok_status();
    };
    LayerWeights L;
    RECUR_RETURN_IF_ERROR(bind(L.attn_norm, "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.ffn_norm, "ffn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind_mla_attention(f, c, p, L, m->mla_f32_));
    RECUR_RETURN_IF_ERROR(bind_ffn_weights(f, c, p, l, L));
    m->layers.push_back(std::move(L));
  }
  RECUR_RETURN_IF_ERROR(m->regroup_weights(options));
  return m;
}

}  // namespace recur
