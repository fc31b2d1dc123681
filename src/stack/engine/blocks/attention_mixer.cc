// The attention mixer: q/k/v projections (plus the architecture's biases and per-head QK
// RMSNorm, model_config.h), RoPE at each row's position (GGUF llama's pairs or NeoX's; over the first
// rotary_dims of each head; gemma3's sliding layers by their own tables), the paged KV cache
// (kernels/attention: a forward of one-token runs appends and runs the paged decode kernel,
// otherwise the paged prefill kernel, causal within each run, within the sliding window on sliding
// layers), qwen3next's sigmoid output gate and the output projection. engine.ggml_arithmetic:
// ggml's RoPE rotation, Q scale (gemma2, phi3) and attention core (AttentionOptions::ggml).
#include <algorithm>
#include <cmath>

#include "engine/blocks/block.h"
#include "engine/layers.h"
#include "kernels/attention/attention.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "kernels/layer/layer_ops.h"
#include "kernels/rmsnorm/rmsnorm.h"
#include "trace/trace.h"

namespace recur {

namespace {

// x[rows, n] += bias[n] for each row (no-op without a bias).
void add_bias_rows(ThreadPool* pool, float* x, int64_t rows, const std::vector<float>& bias) {
  if (bias.empty()) return;
  const int64_t n = int64_t(bias.size());
  for_rows(pool, rows, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) x[i * n + j] += bias[size_t(j)];
  });
}

// Each head_dim-wide head of x[rows * heads, hd] through RMSNorm with weight w (qk_norm; no-op
// when w is empty), by the registered rmsnorm kernel.
void norm_heads(const Step& s, float* x, int64_t head_rows, int64_t hd, const std::vector<float>& w) {
  if (w.empty()) return;
  const kernels::RmsNormFn fn = rmsnorm_for(s);
  const float eps = s.c().rms_eps;
  for_rows(s.intra, head_rows, [&](int64_t i0, int64_t i1) { fn(x + i0 * hd, w.data(), x + i0 * hd, i1 - i0, hd, eps); });
}

// attn_output_gate: the projection wrote [q_h ; gate_h] per head into q ([rows, heads, 2 hd]);
// the gates go to gate and the q parts close up in place to [rows, heads, hd] (each moves to a
// lower or equal offset, in increasing order, so nothing unread is overwritten).
void split_q_gate(float* q, float* gate, int64_t head_rows, int64_t hd) {
  for (int64_t i = 0; i < head_rows; ++i) {
    std::copy_n(q + i * 2 * hd + hd, hd, gate + i * hd);
    if (i > 0) std::copy_n(q + i * 2 * hd, hd, q + i * hd);  // [i hd, (i + 1) hd) ends at or before 2 i hd
  }
}

// out *= sigmoid(gate), elementwise over rows x n.
void apply_output_gate(ThreadPool* pool, float* out, const float* gate, int64_t rows, int64_t n) {
  for_rows(pool, rows, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0 * n; i < i1 * n; ++i) out[i] /= 1.0f + std::exp(-gate[i]);
  });
}

// llama.cpp c392e50's gemma2 and phi3 graphs (and gemma3's later one) scale Q in fp32 after RoPE
// (ggml_scale) and run the softmax at scale 1; llama, qwen2, qwen2moe scale inside the softmax.
// The Q scale of the first kind (the model's attention scale, else 1 / sqrtf(head_dim)); 0 else.
float ggml_query_scale(const ModelConfig& c) {
  if (c.arch != Arch::kGemma2 && c.arch != Arch::kGemma3 && c.arch != Arch::kPhi3) return 0.0f;
  return c.attn_scale != 0 ? c.attn_scale : 1.0f / std::sqrt(float(c.head_dim));
}

}  // namespace

bool layer_split_elsewhere(const Step& s, int l) {
  if (s.r.w.layers[size_t(l)].owns_attention) return false;
  // Layer split: the owner computes the layer whole; this rank adds zeros to the all-reduce.
  std::fill_n(s.r.partial.begin(), s.rows() * s.c().dim, 0.0f);
  s.tap(Op::kAttnOProj, l, s.r.partial.data(), s.c().dim);
  return true;
}

void attention_mixer(const Step& s, int l) {
  RECUR_ZONE("attention");
  zone.arg("layer", l);
  zone.arg("rows", s.rows());
  const ModelConfig& c = s.c();
  ForwardRank& r = s.r;
  const LayerShard& S = r.w.layers[size_t(l)];
  const int64_t M = s.rows(), hd = c.head_dim;
  if (layer_split_elsewhere(s, l)) return;
  const int heads = int(S.heads.size()), kv_heads = int(S.kv_heads.size());
  const int64_t q_local = heads * hd, kv_local = kv_heads * hd;
  const int64_t q_all = int64_t(c.n_heads) * hd, kv_all = int64_t(c.n_kv_heads) * hd;
  const float* h = r.h.data();
  const ProjectionOut qkv[] = {{&S.wq, r.q.data()}, {&S.wk, r.k.data()}, {&S.wv, r.v.data()}};
  project_rows(s, h, M, qkv);
  if (c.attn_output_gate) split_q_gate(r.q.data(), r.gate.data(), M * heads, hd);
  add_bias_rows(s.intra, r.q.data(), M, S.bq);
  add_bias_rows(s.intra, r.k.data(), M, S.bk);
  add_bias_rows(s.intra, r.v.data(), M, S.bv);
  norm_heads(s, r.q.data(), M * heads, hd, S.q_norm);
  norm_heads(s, r.k.data(), M * kv_heads, hd, S.k_norm);
  s.tap(Op::kAttnQProj, l, r.q.data(), q_local, S.heads.begin * hd, q_all);
  s.tap(Op::kAttnKProj, l, r.k.data(), kv_local, S.kv_heads.begin * hd, kv_all);
  s.tap(Op::kAttnVProj, l, r.v.data(), kv_local, S.kv_heads.begin * hd, kv_all);
  {
    // RoPE in place through the registered kernel's rotation (GGUF's interleaved pairs, or NeoX's
    // halves with rope_neox) of each head's first rd dims, by the row's tables (rows.cc).
    const KernelChoice& kr = s.o.kernels.rope;
    RECUR_ZONE("rope");
    zone.arg("variant", kr.variant.data());
    zone.arg("rows", M);
    const kernels::LayerOps& ops = kernels::layer_ops(kr.isa);
    const int64_t rd = c.rotary_dims();
    const bool sliding = c.is_sliding_layer(l);
    const std::vector<float>& tables = sliding && !r.rope_local.empty() ? r.rope_local : r.rope;
    // engine.ggml_arithmetic: ggml's rotation by ggml's caches (rows.cc), then the Q scale of
    // the graphs that scale Q.
    const bool ggml = s.o.ggml.has_value();
    const float q_scale = ggml ? ggml_query_scale(c) : 0.0f;
    for_rows(s.intra, M, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const float* cs = tables.data() + i * 2 * hd;
        for (int h = 0; h < heads; ++h) {
          float* q = r.q.data() + i * q_local + h * hd;
          if (ggml) ggml_arith::rope_rotate(int(rd), c.rope_neox, cs, q, q);
          else ops.rope_row(q, q, cs, cs + rd, rd, c.rope_neox);
          if (q_scale != 0)
            for (int64_t d = 0; d < hd; ++d) q[d] *= q_scale;
        }
        for (int h = 0; h < kv_heads; ++h) {
          float* k = r.k.data() + i * kv_local + h * hd;
          if (ggml) ggml_arith::rope_rotate(int(rd), c.rope_neox, cs, k, k);
          else ops.rope_row(k, k, cs, cs + rd, rd, c.rope_neox);
        }
      }
    });
  }
  const int layer = r.kv_layer[size_t(l)];
  std::vector<int> seqs;
  std::vector<int64_t> counts;
  for (const BatchPlan::Run& run : s.p.runs) {
    seqs.push_back(r.kv_seq[size_t(run.seq)]);
    counts.push_back(run.count);
  }
  namespace paged = kernels::attention;
  const EngineKernels& ek = s.o.kernels;
  // Sliding layers attend to the last sliding_window positions; every page stays in the cache.
  const int64_t window = c.is_sliding_layer(l) ? c.sliding_window : 0;
  // Q already scaled (ggml_query_scale): the softmax at scale 1.
  const float softmax_scale = s.o.ggml && ggml_query_scale(c) != 0 ? 1.0f : c.attn_scale;
  Status st;
  if (s.p.all_single) {
    // Batched decode: append each sequence's token, then one paged decode over all of them, at
    // the variant of kernel.attention_decode.variant.
    RECUR_ZONE("attention_decode");
    zone.arg("variant", ek.attention_decode.variant.data());
    zone.arg("sequences", int64_t(seqs.size()));
    for (size_t i = 0; i < seqs.size() && st; ++i)
      st = r.kv->append(seqs[i], layer, std::span<const float>(r.k.data() + int64_t(i) * kv_local, size_t(kv_local)),
                        std::span<const float>(r.v.data() + int64_t(i) * kv_local, size_t(kv_local)));
    const paged::AttentionOptions o{.isa = ek.attention_decode.isa, .split_k = ek.attention_decode_split_k,
                                    .scale = softmax_scale, .softcap = c.attn_softcap, .window = window,
                                    .operands = s.o.attention_operands, .ggml = s.o.ggml};
    if (o.operands != paged::AttentionOperands::kF32) zone.arg("operands", "cache_type");
    if (o.ggml) zone.arg("arithmetic", "ggml");
    if (st) st = paged::decode(*r.kv, layer, seqs, r.q.data(), heads, r.o.data(), o, s.intra);
  } else {
    RECUR_ZONE("attention_prefill");
    zone.arg("variant", ek.attention_prefill.variant.data());
    zone.arg("rows", M);
    const paged::AttentionOptions o{.isa = ek.attention_prefill.isa, .scale = softmax_scale, .softcap = c.attn_softcap,
                                    .window = window, .operands = s.o.attention_operands, .ggml = s.o.ggml};
    if (o.operands != paged::AttentionOperands::kF32) zone.arg("operands", "cache_type");
    if (o.ggml) zone.arg("arithmetic", "ggml");
    st = paged::prefill(*r.kv, layer, seqs, counts, r.q.data(), r.k.data(), r.v.data(), heads, r.o.data(), o,
                        s.intra);
  }
  r.fail(std::move(st));
  s.tap(Op::kAttnCore, l, r.o.data(), q_local, S.heads.begin * hd, q_all);
  if (c.attn_output_gate) apply_output_gate(s.intra, r.o.data(), r.gate.data(), M, q_local);
  S.wo.apply(r.o.data(), M, r.partial.data(), s.intra);
  s.tap(Op::kAttnOProj, l, r.partial.data(), c.dim);
}

}  // namespace recur
