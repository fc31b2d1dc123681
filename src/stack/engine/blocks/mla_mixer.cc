// The MLA mixer (deepseek2.h): q (direct or low-rank), the latent and shared RoPE key from
// wkv_a, RMSNorm of the latent, YaRN RoPE at each row's position (none for kimi-linear), the latents appended to the
// paged cache (one [c ; k_rope] vector per token), MLA attention at the variant the knobs
// kernel.mla_decode.variant (a forward of one-token runs) or kernel.mla_prefill.variant
// (otherwise) name, and the output projection. engine.tp splits the heads (rank_weights.h);
// every rank computes the whole latent and keeps the whole latent cache. With engine.layer_split
// the layer is whole on its owner rank (all heads, the only latent cache) and empty elsewhere.
#include "engine/blocks/block.h"
#include "kernels/layer/layer_ops.h"
#include "kernels/mla/mla.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "trace/trace.h"

namespace recur {

namespace {

// This rank's heads (engine.tp splits them; every rank holds the whole latent cache).
kernels::mla::Dims mla_dims(const ModelConfig& c, int heads) {
  return {.heads = heads, .nope = c.qk_nope_dim, .rope = c.qk_rope_dim, .rank = c.kv_lora_rank,
          .v_dim = c.v_head_dim};
}

// y[m, n] = RMSNorm(x[m, n] at stride ld) * w in place, through the registered rmsnorm.
void norm_in_place(const Step& s, const Weight& w, float* x, int64_t n, int64_t ld) {
  const kernels::RmsNormFn fn = rmsnorm_for(s);
  std::vector<float> wf(static_cast<size_t>(n));
  w.dequantize_row(0, wf.data());
  for_rows(s.intra, s.rows(), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) fn(x + i * ld, wf.data(), x + i * ld, 1, n, s.c().rms_eps);
  });
}

}  // namespace

void mla_rope_tables(const Step& s) {
  const ModelConfig& c = s.c();
  if (!c.mla_rope) return;  // kimi-linear
  const int d = c.qk_rope_dim;
  const kernels::mla::Yarn yarn{.factor = c.rope_yarn_factor, .beta_fast = c.rope_yarn_beta_fast,
                                .beta_slow = c.rope_yarn_beta_slow, .original_context = c.rope_original_context};
  for (int64_t i = 0; i < s.rows(); ++i) {
    float* cs = s.r.rope.data() + i * 2 * d;
    kernels::mla::yarn_rope_tables(d, double(s.p.positions[size_t(i)]), double(c.rope_theta), yarn, cs, cs + d);
  }
}

void mla_mixer(const Step& s, int l) {
  if (layer_split_elsewhere(s, l)) return;
  RECUR_ZONE("mla");
  zone.arg("layer", l);
  zone.arg("rows", s.rows());
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const LayerWeights& L = s.m.layers[size_t(l)];
  const LayerShard& S = r.w.layers[size_t(l)];
  const kernels::mla::Dims d = mla_dims(c, int(S.heads.size()));
  const int64_t M = s.rows(), H = d.heads, QW = d.q_width(), LW = d.latent_width(), R = d.rank, E = d.rope;
  const int64_t h0 = S.heads.begin, H_all = c.n_heads;
  const float* h = r.h.data();
  if (c.q_lora_rank > 0) {
    S.wq_a.apply(h, M, r.q_a.data(), s.intra);
    norm_in_place(s, L.q_a_norm, r.q_a.data(), c.q_lora_rank, c.q_lora_rank);
    S.wq_b.apply(r.q_a.data(), M, r.q.data(), s.intra);
  } else {
    S.wq.apply(h, M, r.q.data(), s.intra);
  }
  S.wkv_a.apply(h, M, r.k.data(), s.intra);
  s.tap(Op::kAttnQProj, l, r.q.data(), H * QW, h0 * QW, H_all * QW);
  norm_in_place(s, L.kv_a_norm, r.k.data(), R, LW);
  if (c.mla_rope) {
    const KernelChoice& kr = s.o.kernels.rope;
    RECUR_ZONE("rope");
    zone.arg("variant", kr.variant.data());
    zone.arg("rows", M);
    const kernels::LayerOps& ops = kernels::layer_ops(kr.isa);
    for_rows(s.intra, M, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const float* cs = r.rope.data() + i * 2 * E;
        for (int64_t hd = 0; hd < H; ++hd) {
          float* q = r.q.data() + (i * H + hd) * QW + d.nope;
          ops.rope_row(q, q, cs, cs + E, E, false);
        }
        float* k = r.k.data() + i * LW + R;
        ops.rope_row(k, k, cs, cs + E, E, false);
      }
    });
  }
  const int layer = r.kv_layer[size_t(l)];
  std::vector<int> seqs;
  std::vector<int64_t> counts;
  Status st;
  int64_t row = 0;
  for (const BatchPlan::Run& run : s.p.runs) {
    seqs.push_back(r.kv_seq[size_t(run.seq)]);
    counts.push_back(run.count);
    for (int64_t j = 0; j < run.count && st; ++j, ++row)
      st = r.kv->append(seqs.back(), layer, std::span<const float>(r.k.data() + row * LW, size_t(LW)), {});
  }
  auto attend = [&](const KernelChoice& kc) -> Status {
    RECUR_ASSIGN_OR_RETURN(kernels::mla::Variant variant, kernels::mla::variant_of_kernel(kc.variant));
    const double scale = kernels::mla::softmax_scale(d.nope, d.rope, c.rope_yarn_factor, c.rope_yarn_log_mul);
    const kernels::mla::Weights w{.wk = reinterpret_cast<const float*>(L.wk_b.data) + h0 * R * d.nope,
                                  .wv = reinterpret_cast<const float*>(L.wv_b.data) + h0 * d.v_dim * R};
    return kernels::mla::attend(*r.kv, layer, seqs, counts, r.q.data(), d, w, float(scale), variant, kc.isa, r.o.data(),
                                s.intra);
  };
  if (st && s.p.all_single) {
    RECUR_ZONE("mla_decode");
    zone.arg("variant", s.o.kernels.mla_decode.variant.data());
    zone.arg("rows", M);
    st = attend(s.o.kernels.mla_decode);
  } else if (st) {
    RECUR_ZONE("mla_prefill");
    zone.arg("variant", s.o.kernels.mla_prefill.variant.data());
    zone.arg("rows", M);
    st = attend(s.o.kernels.mla_prefill);
  }
  r.fail(std::move(st));
  s.tap(Op::kAttnCore, l, r.o.data(), H * d.v_dim, h0 * d.v_dim, H_all * d.v_dim);
  S.wo.apply(r.o.data(), M, r.partial.data(), s.intra);
  s.tap(Op::kAttnOProj, l, r.partial.data(), c.dim);
}

}  // namespace recur
