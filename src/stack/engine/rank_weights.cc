#include "engine/rank_weights.h"

#include <utility>

#include "engine/moe_ep.h"

namespace recur {
namespace {

// The row-parallel projection of w's columns `cols` (a copy when ranks > 1, recorded in
// `copied` so its file pages can be released once every rank has its copy; a view otherwise).
Result<Projection> rank_row_parallel(const Weight& w, Span cols, int ranks, gemm::Precision p,
                                       const ProjectionForm& form, std::vector<const Weight*>& copied) {
  RECUR_ASSIGN_OR_RETURN(auto owned, row_parallel_shard(w, cols, ranks));
  if (ranks > 1) copied.push_back(&w);
  return Projection::create(std::move(owned), p, form);
}

Result<FfnShard> rank_ffn_shard(const Weight& gate, const Weight& up, const Weight& down, Span ffn, int tp,
                                  gemm::Precision p, const ProjectionForm& form, std::vector<const Weight*>& copied) {
  FfnShard s;
  RECUR_ASSIGN_OR_RETURN(s.gate, Projection::create(weight_rows(gate, ffn.begin, ffn.end), p, form));
  RECUR_ASSIGN_OR_RETURN(s.up, Projection::create(weight_rows(up, ffn.begin, ffn.end), p, form));
  RECUR_ASSIGN_OR_RETURN(s.down, rank_row_parallel(down, ffn, tp, p, form, copied));
  return s;
}

// Rows [r0, r1) of w widened to fp32, row-major.
std::vector<float> rank_widened_rows(const Weight& w, int64_t r0, int64_t r1) {
  std::vector<float> out(size_t((r1 - r0) * w.cols));
  for (int64_t r = r0; r < r1; ++r) w.dequantize_row(r, out.data() + (r - r0) * w.cols);
  return out;
}

// Entries [begin, end) of a vector weight ([1, n]) widened to fp32; empty when absent.
std::vector<float> rank_widened_span(const Weight& w, int64_t begin, int64_t end) {
  if (w.data == nullptr) return {};
  const std::vector<float> all = rank_widened_rows(w, 0, 1);
  return std::vector<float>(all.begin() + begin, all.begin() + end);
}

// The attention features of a layer for this rank's heads and KV heads.
void rank_attention_features(const LayerWeights& L, Span heads, Span kv_heads, int64_t hd, LayerShard& S) {
  S.bq = rank_widened_span(L.bq, heads.begin * hd, heads.end * hd);
  S.bk = rank_widened_span(L.bk, kv_heads.begin * hd, kv_heads.end * hd);
  S.bv = rank_widened_span(L.bv, kv_heads.begin * hd, kv_heads.end * hd);
  S.q_norm = rank_widened_span(L.q_norm, 0, L.q_norm.cols);
  S.k_norm = rank_widened_span(L.k_norm, 0, L.k_norm.cols);
}

// An MLA layer's shard for `heads`: q (or q_b after the whole q_a) of those heads' rows, the
// whole latent projection (every holder keeps the whole latent cache), wo's columns of those
// heads' values (row-parallel over `ranks`; a view when 1).
Status rank_mla_shard(const LayerWeights& L, const ModelConfig& c, Span heads, int ranks, gemm::Precision p,
                      const ProjectionForm& form, std::vector<const Weight*>& copied, LayerShard& S) {
  S.heads = heads;
  S.kv_heads = {0, 1};
  const int64_t qw = int64_t(c.qk_nope_dim) + c.qk_rope_dim, vw = c.v_head_dim;
  const Span q_rows{heads.begin * qw, heads.end * qw};
  if (c.q_lora_rank > 0) {
    RECUR_ASSIGN_OR_RETURN(S.wq_a, Projection::create(L.wq_a, p, form));
    RECUR_ASSIGN_OR_RETURN(S.wq_b, Projection::create(weight_rows(L.wq_b, q_rows.begin, q_rows.end), p, form));
  } else {
    RECUR_ASSIGN_OR_RETURN(S.wq, Projection::create(weight_rows(L.wq, q_rows.begin, q_rows.end), p, form));
  }
  RECUR_ASSIGN_OR_RETURN(S.wkv_a, Projection::create(L.wkv_a, p, form));
  RECUR_ASSIGN_OR_RETURN(S.wo, rank_row_parallel(L.wo, {heads.begin * vw, heads.end * vw}, ranks, p, form, copied));
  return ok_status();
}

// The routed experts' form: under engine.ggml_arithmetic they are ggml_mul_mat_id's products,
// which take the vec_dot loop at any token count (the shared expert is a plain mul_mat).
ProjectionForm routed_expert_form(const ProjectionForm& form) {
  ProjectionForm f = form;
  if (f.ggml) f.ggml->vec_dot_only = true;
  return f;
}

}  // namespace

Status check_tp_split(const ModelConfig& c, int tp, int64_t block, bool layer_split) {
  bool any_kda = false, any_attention = false;
  for (int l = 0; l < c.n_layers; ++l) (c.is_kda_layer(l) ? any_kda : any_attention) = true;
  if (layer_split && tp > 1) any_attention = false;  // whole on one rank: nothing to split
  if (any_attention && c.n_heads % tp != 0)
    return invalid_argument("engine.tp={} does not divide the {} attention heads", tp, c.n_heads);
  // The output projection's columns per rank: each head's value width (MLA: v_head_dim).
  const int64_t head_cols = c.is_mla() ? c.v_head_dim : c.head_dim;
  if (any_attention && ((c.n_heads / tp) * head_cols) % block != 0)
    return invalid_argument("engine.tp={}: a rank's {} attention heads of {} are not whole {}-element blocks", tp,
                            c.n_heads / tp, head_cols, block);
  if (any_kda && c.kda_heads % tp != 0)
    return invalid_argument("engine.tp={} does not divide the {} KDA value heads", tp, c.kda_heads);
  if (any_kda && c.kda_key_heads % tp != 0 && tp % c.kda_key_heads != 0)
    return invalid_argument("engine.tp={}: the {} KDA key heads neither split across the ranks nor divide them, "
                            "so a rank's value heads would straddle key heads",
                            tp, c.kda_key_heads);
  if (any_kda && ((c.kda_heads / tp) * c.kda_head_dim) % block != 0)
    return invalid_argument("engine.tp={}: a rank's {} KDA heads of {} are not whole {}-element blocks", tp,
                            c.kda_heads / tp, c.kda_head_dim, block);
  // Every FFN width a layer has: the experts' (or the dense FFN's), deepseek2's leading dense
  // layers', the shared expert's.
  const std::pair<const char*, int> widths[] = {
      {"FFN", c.ffn_dim},
      {"leading dense FFN", c.leading_dense_layers > 0 ? c.dense_ffn_dim : c.ffn_dim},
      {"shared expert", c.n_experts > 0 && c.shared_expert ? c.shared_width() : c.ffn_dim}};
  for (const auto& [what, width] : widths)
    if (width % tp != 0 || (width / tp) % block != 0)
      return invalid_argument("engine.tp={}: {} width {} does not split into whole {}-element blocks", tp, what, width,
                              block);
  if (any_attention && !c.is_mla()) {
    // The paged attention kernel maps local query head h to local KV head h / (heads / kv_heads),
    // so a rank's heads must cover its KV heads in equal groups.
    const int64_t group = c.n_heads / c.n_kv_heads;
    for (int r = 0; r < tp; ++r) {
      const Span heads = rank_span(c.n_heads, tp, r);
      const Span kv{heads.begin / group, (heads.end - 1) / group + 1};
      bool even = heads.size() % kv.size() == 0;
      for (int64_t h = heads.begin; even && h < heads.end; ++h)
        even = h / group - kv.begin == (h - heads.begin) / (heads.size() / kv.size());
      if (!even)
        return invalid_argument("engine.tp={}: rank {}'s attention heads [{}, {}) do not split evenly over its KV "
                                  "heads [{}, {})",
                                  tp, r, heads.begin, heads.end, kv.begin, kv.end);
    }
  }
  return ok_status();
}

Result<RankWeights> shard_rank(const TransformerModel& m, int rank, int tp, int ep, gemm::Precision p,
                               const ProjectionForm& form, bool layer_split) {
  const ModelConfig& c = m.config();
  int attention_index = 0;
  const int64_t K = c.kda_head_dim, hd = c.head_dim;
  const int index = tp > 1 ? rank : 0;  // the tensor-parallel index (ranks replicate when tp = 1)
  RankWeights r;
  r.index = rank;
  r.ffn = rank_span(c.ffn_dim, tp, index);
  r.shared_ffn = rank_span(c.shared_width(), tp, index);
  r.vocab = rank_span(c.vocab, tp, index);
  if (ep > 1) r.experts = moe::ep_experts(c.n_experts, ep, rank);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = m.layers[size_t(l)];
    LayerShard S;
    if (L.kda) {
      const int64_t group = c.kda_heads / c.kda_key_heads;
      S.v_heads = rank_span(c.kda_heads, tp, index);
      S.k_heads = {S.v_heads.begin / group, (S.v_heads.end - 1) / group + 1};
      const Span kc{S.k_heads.begin * K, S.k_heads.end * K}, vc{S.v_heads.begin * K, S.v_heads.end * K};
      RECUR_ASSIGN_OR_RETURN(S.wq, Projection::create(weight_rows(L.wq, kc.begin, kc.end), p, form));
      RECUR_ASSIGN_OR_RETURN(S.wk, Projection::create(weight_rows(L.wk, kc.begin, kc.end), p, form));
      RECUR_ASSIGN_OR_RETURN(S.wv, Projection::create(weight_rows(L.wv, vc.begin, vc.end), p, form));
      // kda_scalar_decay (qwen3next): one decay row per head, not per channel.
      const Span f_rows = c.kda_scalar_decay ? S.v_heads : vc;
      RECUR_ASSIGN_OR_RETURN(S.wf, Projection::create(weight_rows(L.wf, f_rows.begin, f_rows.end), p, form));
      RECUR_ASSIGN_OR_RETURN(S.wb, Projection::create(weight_rows(L.wb, S.v_heads.begin, S.v_heads.end), p, form));
      RECUR_ASSIGN_OR_RETURN(S.out_gate, Projection::create(weight_rows(L.out_gate, vc.begin, vc.end), p, form));
      if (L.wf_a.data != nullptr) {
        RECUR_ASSIGN_OR_RETURN(S.wf_a, Projection::create(L.wf_a, p, form));
        RECUR_ASSIGN_OR_RETURN(S.out_gate_a, Projection::create(L.out_gate_a, p, form));
      }
      RECUR_ASSIGN_OR_RETURN(S.wo, rank_row_parallel(L.wo, vc, tp, p, form, r.copied_sources));
      S.conv_q = rank_widened_rows(L.conv_q, kc.begin, kc.end);
      S.conv_k = rank_widened_rows(L.conv_k, kc.begin, kc.end);
      S.conv_v = rank_widened_rows(L.conv_v, vc.begin, vc.end);
      const std::vector<float> a_log = rank_widened_rows(L.a_log, 0, 1), dt_bias = rank_widened_rows(L.dt_bias, 0, 1);
      S.a_log.assign(a_log.begin() + S.v_heads.begin, a_log.begin() + S.v_heads.end);
      S.dt_bias.assign(dt_bias.begin() + vc.begin, dt_bias.begin() + vc.end);
      S.out_norm = rank_widened_rows(L.out_norm, 0, 1);
    } else if (L.mla) {
      // Layer split: the owner holds every head (views, as at tp = 1) and the layer's whole
      // latent cache; the other ranks hold nothing for it. Otherwise the heads split over tp.
      const bool whole = layer_split && tp > 1;
      S.owns_attention = !whole || layer_split_owner(attention_index++, tp) == index;
      if (S.owns_attention) {
        const Span heads = whole ? Span{0, c.n_heads} : rank_span(c.n_heads, tp, index);
        RECUR_RETURN_IF_ERROR(rank_mla_shard(L, c, heads, whole ? 1 : tp, p, form, r.copied_sources, S));
      }
    } else if (layer_split && tp > 1) {
      // The owner holds the layer whole (wo as a view, as with tp = 1); the others nothing.
      S.owns_attention = layer_split_owner(attention_index++, tp) == index;
      if (S.owns_attention) {
        S.heads = {0, c.n_heads};
        S.kv_heads = {0, c.n_kv_heads};
        RECUR_ASSIGN_OR_RETURN(S.wq, Projection::create(weight_rows(L.wq, 0, L.wq.rows), p, form));
        RECUR_ASSIGN_OR_RETURN(S.wk, Projection::create(weight_rows(L.wk, 0, L.wk.rows), p, form));
        RECUR_ASSIGN_OR_RETURN(S.wv, Projection::create(weight_rows(L.wv, 0, L.wv.rows), p, form));
        RECUR_ASSIGN_OR_RETURN(S.wo, rank_row_parallel(L.wo, {0, L.wo.cols}, 1, p, form, r.copied_sources));
        rank_attention_features(L, S.heads, S.kv_heads, hd, S);
      }
    } else {
      const int64_t group = c.n_heads / c.n_kv_heads, q_rows = c.attn_output_gate ? 2 * hd : hd;  // + the gate's
      S.heads = rank_span(c.n_heads, tp, index);
      S.kv_heads = {S.heads.begin / group, (S.heads.end - 1) / group + 1};
      RECUR_ASSIGN_OR_RETURN(
          S.wq, Projection::create(weight_rows(L.wq, S.heads.begin * q_rows, S.heads.end * q_rows), p, form));
      RECUR_ASSIGN_OR_RETURN(S.wk,
                             Projection::create(weight_rows(L.wk, S.kv_heads.begin * hd, S.kv_heads.end * hd), p, form));
      RECUR_ASSIGN_OR_RETURN(S.wv,
                             Projection::create(weight_rows(L.wv, S.kv_heads.begin * hd, S.kv_heads.end * hd), p, form));
      RECUR_ASSIGN_OR_RETURN(
          S.wo, rank_row_parallel(L.wo, {S.heads.begin * hd, S.heads.end * hd}, tp, p, form, r.copied_sources));
      rank_attention_features(L, S.heads, S.kv_heads, hd, S);
    }
    S.sh_gate_inp = rank_widened_span(L.sh_gate_inp, 0, L.sh_gate_inp.cols);
    std::vector<const Weight*>& copied = r.copied_sources;
    if (c.is_dense_ffn_layer(l)) {
      // The layer's own width (deepseek2's leading dense layers differ from its experts).
      const Span cols = rank_span(L.w_gate.rows, tp, index);
      RECUR_ASSIGN_OR_RETURN(S.dense, rank_ffn_shard(L.w_gate, L.w_up, L.w_down, cols, tp, p, form, copied));
    } else if (ep > 1) {
      const ProjectionForm expert_form = routed_expert_form(form);
      // Whole experts (views, no copy), and the whole shared expert for the rank's own tokens.
      const Span all{0, c.ffn_dim};
      S.experts.resize(size_t(c.n_experts));
      for (int64_t e = r.experts.begin; e < r.experts.end; ++e) {
        RECUR_ASSIGN_OR_RETURN(S.experts[size_t(e)], rank_ffn_shard(L.exp_gate[size_t(e)], L.exp_up[size_t(e)],
                                                                      L.exp_down[size_t(e)], all, 1, p, expert_form,
                                                                      copied));
      }
      if (c.shared_expert) {
        RECUR_ASSIGN_OR_RETURN(S.shared, rank_ffn_shard(L.sh_gate, L.sh_up, L.sh_down, {0, c.shared_width()}, 1, p,
                                                        form, copied));
      }
    } else {
      const ProjectionForm expert_form = routed_expert_form(form);
      for (int e = 0; e < c.n_experts; ++e) {
        RECUR_ASSIGN_OR_RETURN(FfnShard x, rank_ffn_shard(L.exp_gate[size_t(e)], L.exp_up[size_t(e)],
                                                            L.exp_down[size_t(e)], r.ffn, tp, p, expert_form, copied));
        S.experts.push_back(std::move(x));
      }
      if (c.shared_expert) {
        RECUR_ASSIGN_OR_RETURN(S.shared,
                               rank_ffn_shard(L.sh_gate, L.sh_up, L.sh_down, r.shared_ffn, tp, p, form, copied));
      }
    }
    r.layers.push_back(std::move(S));
  }
  RECUR_ASSIGN_OR_RETURN(r.output, Projection::create(weight_rows(m.output, r.vocab.begin, r.vocab.end), p, form));
  return r;
}

}  // namespace recur
