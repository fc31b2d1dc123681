#include "engine/hybrid.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/thread_pool.h"
#include "engine/hybrid_reference.h"
#include "engine/layers.h"
#include "engine/projection.h"
#include "engine/tensor_parallel.h"
#include "kernels/kda/kda.h"
#include "trace/trace.h"

namespace recur {

RECUR_KNOB(engine_kda_decode_variant,
           {.name = "engine.kda.decode_variant", .type = KnobType::kEnum,
            .choices = {"vtile", "vtile_recip", "hoisted", "hoisted_recip"}, .default_value = "hoisted",
            .components = {"kernel:kda_decode"},
            .help = "KDA decode work split: prologue per V-tile (vtile, vtile_recip) or once per head (hoisted, "
                    "hoisted_recip); _recip: rsqrt/rcp + Newton step instead of divisions"});

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float silu(float x) { return x * sigmoid(x); }

// Binds expert e of a 3-d tensor {cols, rows, experts} as a 2-d Weight.
Result<std::vector<Weight>> bind_experts(const gguf::File& f, const std::string& name, int experts, int64_t rows,
                                         int64_t cols) {
  const gguf::TensorInfo* t = f.tensor(name);
  if (t == nullptr) return not_found("{}: tensor '{}' is missing", f.source(), name);
  if (t->dims != std::vector<uint64_t>{uint64_t(cols), uint64_t(rows), uint64_t(experts)})
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [{}, {}, {}]", f.source(), name,
                       t->info_position, fmt::join(t->dims, ", "), cols, rows, experts);
  std::vector<Weight> out;
  for (int e = 0; e < experts; ++e) {
    Weight w{fmt::format("{}[{}]", name, e), t->type, rows, cols, nullptr};
    w.data = t->data + size_t(e) * size_t(rows) * w.row_bytes();
    out.push_back(w);
  }
  return out;
}

// What one rank owns: its heads, FFN columns and vocabulary rows of every layer (tensor_parallel.h),
// as projections at the session's matmul precision (projection.h).
struct FfnShard {
  Projection gate, up, down;  // down: row-parallel (this rank's FFN columns)
};

Result<FfnShard> ffn_shard(const Weight& gate, const Weight& up, const Weight& down, Span ffn, int tp,
                           gemm::Precision p) {
  FfnShard s;
  RECUR_ASSIGN_OR_RETURN(s.gate, Projection::create(weight_rows(gate, ffn.begin, ffn.end), p));
  RECUR_ASSIGN_OR_RETURN(s.up, Projection::create(weight_rows(up, ffn.begin, ffn.end), p));
  RECUR_ASSIGN_OR_RETURN(auto cols, row_parallel_shard(down, ffn, tp));
  RECUR_ASSIGN_OR_RETURN(s.down, Projection::create(std::move(cols), p));
  return s;
}

struct LayerShard {
  // KDA: value heads, and the key heads they read (ranks may share a key head, as GQA ranks
  // share a KV head). Attention: heads and KV heads. wo is row-parallel in both.
  Span v_heads, k_heads, heads, kv_heads;
  Projection wq, wk, wv, wf, wb, out_gate, wo;
  Weight conv_q, conv_k, conv_v;
  std::vector<float> a_log, dt_bias;
  FfnShard dense, shared;
  std::vector<FfnShard> experts;
};

struct HybridRank {
  int index = 0;
  Span ffn, vocab;
  std::vector<LayerShard> layers;
  Projection output;
  std::vector<float> x, h, partial, tmp, norm_w, q, k, v, g, b, o, gate, ff_a, ff_b, router, att, conv_row;
  std::vector<std::vector<float>> kda_state, conv_state, keys, values;
  kda::Workspace ws;
  Status status;
};

// Checks that `tp` splits every sharded dimension of `c` evenly and into whole storage blocks.
Status check_tp_split(const ModelConfig& c, int tp, int64_t block) {
  bool any_kda = false, any_attention = false;
  for (int l = 0; l < c.n_layers; ++l) (c.is_kda_layer(l) ? any_kda : any_attention) = true;
  if (any_attention && c.n_heads % tp != 0)
    return invalid_argument("engine.tp={} does not divide the {} attention heads", tp, c.n_heads);
  if (any_attention && ((c.n_heads / tp) * c.head_dim) % block != 0)
    return invalid_argument("engine.tp={}: a rank's {} attention heads of {} are not whole {}-element blocks", tp,
                            c.n_heads / tp, c.head_dim, block);
  if (any_kda && c.kda_heads % tp != 0)
    return invalid_argument("engine.tp={} does not divide the {} KDA value heads", tp, c.kda_heads);
  if (any_kda && c.kda_key_heads % tp != 0 && tp % c.kda_key_heads != 0)
    return invalid_argument("engine.tp={}: the {} KDA key heads neither split across the ranks nor divide them, "
                            "so a rank's value heads would straddle key heads",
                            tp, c.kda_key_heads);
  if (any_kda && ((c.kda_heads / tp) * c.kda_head_dim) % block != 0)
    return invalid_argument("engine.tp={}: a rank's {} KDA heads of {} are not whole {}-element blocks", tp,
                            c.kda_heads / tp, c.kda_head_dim, block);
  if (c.ffn_dim % tp != 0 || (c.ffn_dim / tp) % block != 0)
    return invalid_argument("engine.tp={}: FFN width {} does not split into whole {}-element blocks", tp, c.ffn_dim,
                            block);
  return ok_status();
}

class HybridSession final : public Session {
 public:
  static Result<std::unique_ptr<HybridSession>> create(const HybridModel& m, ThreadPool& pool, int max_tokens,
                                                       kda::DecodeVariant variant, int tp, ReduceDtype reduce,
                                                       gemm::Precision precision) {
    const ModelConfig& c = m.config();
    const HybridLayerWeights& first = m.layers[0];
    const Weight& down = c.n_experts == 0 ? first.w_down : first.exp_down[0];
    RECUR_RETURN_IF_ERROR(check_tp_split(c, tp, gguf::block_layout(down.type).elements));
    std::unique_ptr<HybridSession> s(new HybridSession(m, pool, max_tokens, variant));
    for (int r = 0; r < tp; ++r) {
      auto rank = std::make_unique<HybridRank>();
      RECUR_RETURN_IF_ERROR(s->init_rank(*rank, r, tp, precision));
      s->ranks_.push_back(std::move(rank));
    }
    s->logits_.resize(size_t(c.vocab));
    if (tp > 1) {
      RECUR_ASSIGN_OR_RETURN(s->runner_, RankRunner::create(tp, c.dim, reduce));
    }
    return s;
  }

  int position() const override { return pos_; }

  Result<std::span<const float>> step(TokenId token) override {
    const ModelConfig& c = m_.config();
    if (token < 0 || token >= c.vocab) return invalid_argument("token {} outside the vocabulary of {}", token, c.vocab);
    if (pos_ >= max_tokens_) return invalid_argument("sequence is full ({} tokens)", max_tokens_);
    RECUR_ZONE("step");
    zone.arg("pos", pos_);
    zone.arg("tp", int64_t(ranks_.size()));
    if (ranks_.size() == 1) rank_step(*ranks_[0], token);
    else runner_->run([&](int r) { rank_step(*ranks_[size_t(r)], token); });
    for (const auto& r : ranks_) RECUR_RETURN_IF_ERROR(r->status);
    ++pos_;
    return std::span<const float>(logits_);
  }

 private:
  HybridSession(const HybridModel& m, ThreadPool& pool, int max_tokens, kda::DecodeVariant variant)
      : m_(m), pool_(pool), max_tokens_(max_tokens), variant_(variant) {}

  Status init_rank(HybridRank& r, int index, int tp, gemm::Precision p) {
    const ModelConfig& c = m_.config();
    const int64_t K = c.kda_head_dim, hd = c.head_dim;
    r.index = index;
    r.ffn = rank_span(c.ffn_dim, tp, index);
    r.vocab = rank_span(c.vocab, tp, index);
    const int64_t qk_dim = int64_t(c.kda_key_heads) * K, v_dim = int64_t(c.kda_heads) * K;
    const int64_t q_dim = int64_t(c.n_heads) * hd, kv_dim = int64_t(c.n_kv_heads) * hd;
    for (int l = 0; l < c.n_layers; ++l) {
      const HybridLayerWeights& L = m_.layers[size_t(l)];
      LayerShard S;
      if (L.kda) {
        const int64_t group = c.kda_heads / c.kda_key_heads;
        S.v_heads = rank_span(c.kda_heads, tp, index);
        S.k_heads = {S.v_heads.begin / group, (S.v_heads.end - 1) / group + 1};
        const Span kc{S.k_heads.begin * K, S.k_heads.end * K}, vc{S.v_heads.begin * K, S.v_heads.end * K};
        RECUR_ASSIGN_OR_RETURN(S.wq, Projection::create(weight_rows(L.wq, kc.begin, kc.end), p));
        RECUR_ASSIGN_OR_RETURN(S.wk, Projection::create(weight_rows(L.wk, kc.begin, kc.end), p));
        RECUR_ASSIGN_OR_RETURN(S.wv, Projection::create(weight_rows(L.wv, vc.begin, vc.end), p));
        RECUR_ASSIGN_OR_RETURN(S.wf, Projection::create(weight_rows(L.wf, vc.begin, vc.end), p));
        RECUR_ASSIGN_OR_RETURN(S.wb, Projection::create(weight_rows(L.wb, S.v_heads.begin, S.v_heads.end), p));
        RECUR_ASSIGN_OR_RETURN(S.out_gate, Projection::create(weight_rows(L.out_gate, vc.begin, vc.end), p));
        RECUR_ASSIGN_OR_RETURN(auto wo, row_parallel_shard(L.wo, vc, tp));
        RECUR_ASSIGN_OR_RETURN(S.wo, Projection::create(std::move(wo), p));
        S.conv_q = weight_rows(L.conv_q, kc.begin, kc.end);
        S.conv_k = weight_rows(L.conv_k, kc.begin, kc.end);
        S.conv_v = weight_rows(L.conv_v, vc.begin, vc.end);
        std::vector<float> a_log(static_cast<size_t>(c.kda_heads)), dt_bias(static_cast<size_t>(v_dim));
        L.a_log.dequantize_row(0, a_log.data());
        L.dt_bias.dequantize_row(0, dt_bias.data());
        S.a_log.assign(a_log.begin() + S.v_heads.begin, a_log.begin() + S.v_heads.end);
        S.dt_bias.assign(dt_bias.begin() + vc.begin, dt_bias.begin() + vc.end);
        r.kda_state.emplace_back(size_t(S.v_heads.size() * K * K), 0.0f);
        r.conv_state.emplace_back(size_t(c.conv_size - 1) * size_t(2 * kc.size() + vc.size()), 0.0f);
        r.keys.emplace_back();
        r.values.emplace_back();
      } else {
        const int64_t group = c.n_heads / c.n_kv_heads;
        S.heads = rank_span(c.n_heads, tp, index);
        S.kv_heads = {S.heads.begin / group, (S.heads.end - 1) / group + 1};
        RECUR_ASSIGN_OR_RETURN(S.wq, Projection::create(weight_rows(L.wq, S.heads.begin * hd, S.heads.end * hd), p));
        RECUR_ASSIGN_OR_RETURN(S.wk, Projection::create(weight_rows(L.wk, S.kv_heads.begin * hd, S.kv_heads.end * hd), p));
        RECUR_ASSIGN_OR_RETURN(S.wv, Projection::create(weight_rows(L.wv, S.kv_heads.begin * hd, S.kv_heads.end * hd), p));
        RECUR_ASSIGN_OR_RETURN(auto wo, row_parallel_shard(L.wo, {S.heads.begin * hd, S.heads.end * hd}, tp));
        RECUR_ASSIGN_OR_RETURN(S.wo, Projection::create(std::move(wo), p));
        r.kda_state.emplace_back();
        r.conv_state.emplace_back();
        r.keys.emplace_back(size_t(max_tokens_ * S.kv_heads.size() * hd), 0.0f);
        r.values.emplace_back(size_t(max_tokens_ * S.kv_heads.size() * hd), 0.0f);
      }
      if (c.n_experts == 0) {
        RECUR_ASSIGN_OR_RETURN(S.dense, ffn_shard(L.w_gate, L.w_up, L.w_down, r.ffn, tp, p));
      } else {
        for (int e = 0; e < c.n_experts; ++e) {
          RECUR_ASSIGN_OR_RETURN(FfnShard x, ffn_shard(L.exp_gate[size_t(e)], L.exp_up[size_t(e)],
                                                       L.exp_down[size_t(e)], r.ffn, tp, p));
          S.experts.push_back(std::move(x));
        }
        if (c.shared_expert) {
          RECUR_ASSIGN_OR_RETURN(S.shared, ffn_shard(L.sh_gate, L.sh_up, L.sh_down, r.ffn, tp, p));
        }
      }
      r.layers.push_back(std::move(S));
    }
    RECUR_ASSIGN_OR_RETURN(r.output, Projection::create(weight_rows(m_.output, r.vocab.begin, r.vocab.end), p));
    const int64_t widest = std::max({int64_t(c.dim), q_dim, qk_dim, v_dim, int64_t(c.ffn_dim)});
    for (auto* buf : {&r.x, &r.h, &r.partial, &r.tmp}) buf->resize(size_t(c.dim));
    r.norm_w.resize(size_t(widest));
    r.q.resize(size_t(std::max(q_dim, qk_dim)));
    r.k.resize(size_t(std::max(kv_dim, qk_dim)));
    r.v.resize(size_t(std::max(kv_dim, v_dim)));
    r.g.resize(size_t(v_dim));
    r.b.resize(size_t(c.kda_heads));
    r.o.resize(size_t(std::max(q_dim, v_dim)));
    r.gate.resize(size_t(v_dim));
    r.ff_a.resize(size_t(c.ffn_dim));
    r.ff_b.resize(size_t(c.ffn_dim));
    r.router.resize(size_t(c.n_experts));
    r.att.resize(size_t(c.n_heads) * size_t(max_tokens_));
    return ok_status();
  }

  // The tap (op_tap.h): `op` and `inputs` are names inside layer l ("<stream>" is the residual
  // stream entering it); with l < 0 they are whole names. Replicated tensors come from rank 0.
  void record(const HybridRank& r, int l, std::string_view op, std::string_view component,
              std::initializer_list<std::string_view> inputs, OpShard shard, const float* data, int64_t n,
              int64_t offset = 0, int64_t size = 0) const {
    if (shard == OpShard::kWhole && r.index != 0) return;
    auto name = [&](std::string_view o) {
      if (l < 0) return std::string(o);
      if (o == "<stream>") return l == 0 ? std::string("embed") : fmt::format("layer.{}.residual", l - 1);
      return fmt::format("layer.{}.{}", l, o);
    };
    OpRecord rec{.name = name(op), .component = std::string(component), .inputs = {}, .rank = r.index,
                 .shard = shard, .offset = offset, .size = size > 0 ? size : n,
                 .data = std::span<const float>(data, size_t(n))};
    for (std::string_view in : inputs) rec.inputs.push_back(name(in));
    op_tap_->record(rec);
  }

  // Sums the rank partials in r.partial (a no-op for one rank), then taps the result.
  void all_reduce(HybridRank& r, int l, std::string_view op, std::string_view input) {
    const int dim = m_.config().dim;
    if (ranks_.size() > 1) {
      RECUR_ZONE("all_reduce");
      zone.arg("ranks", int64_t(ranks_.size()));
      zone.arg("floats", dim);
      runner_->group().all_reduce_sum(r.index, r.partial.data(), r.partial.data(), dim);
    }
    if (op_tap_) record(r, l, op, "op:all_reduce", {input}, OpShard::kWhole, r.partial.data(), dim);
  }

  void rank_step(HybridRank& r, TokenId token) {
    const ModelConfig& c = m_.config();
    ThreadPool* intra = ranks_.size() == 1 ? &pool_ : nullptr;  // one rank: parallel inside each product
    m_.token_embedding.dequantize_row(token, r.x.data());
    if (op_tap_) record(r, -1, "embed", "engine:embed", {}, OpShard::kWhole, r.x.data(), c.dim);
    for (int l = 0; l < c.n_layers; ++l) {
      RECUR_ZONE("layer");
      zone.arg("layer", l);
      zone.arg("rank", r.index);
      zone.arg("kind", m_.layers[size_t(l)].kda ? "kda" : "attention");
      const HybridLayerWeights& L = m_.layers[size_t(l)];
      rmsnorm(r.h.data(), r.x.data(), L.attn_norm, c.dim, c.rms_eps, r.norm_w.data());
      if (op_tap_) record(r, l, "attn_norm", "engine:norm", {"<stream>"}, OpShard::kWhole, r.h.data(), c.dim);
      if (L.kda) {
        r.status = kda_mixer(r, l, intra);
        all_reduce(r, l, "kda.all_reduce", "kda.out_proj");
      } else {
        attention_mixer(r, l, intra);
        all_reduce(r, l, "attn.all_reduce", "attn.o_proj");
      }
      for (int i = 0; i < c.dim; ++i) r.x[size_t(i)] += r.partial[size_t(i)];
      if (op_tap_)
        record(r, l, "mix_residual", "engine:residual", {"<stream>", L.kda ? "kda.all_reduce" : "attn.all_reduce"},
               OpShard::kWhole, r.x.data(), c.dim);
      rmsnorm(r.h.data(), r.x.data(), L.ffn_norm, c.dim, c.rms_eps, r.norm_w.data());
      if (op_tap_) record(r, l, "ffn_norm", "engine:norm", {"mix_residual"}, OpShard::kWhole, r.h.data(), c.dim);
      mlp(r, l, intra);
      all_reduce(r, l, "ffn.all_reduce", c.n_experts == 0 ? "ffn.down" : "ffn.moe");
      for (int i = 0; i < c.dim; ++i) r.x[size_t(i)] += r.partial[size_t(i)];
      if (op_tap_)
        record(r, l, "residual", "engine:residual", {"mix_residual", "ffn.all_reduce"}, OpShard::kWhole, r.x.data(),
               c.dim);
      if (observer_ && r.index == 0) observer_(l, r.x);
    }
    rmsnorm(r.h.data(), r.x.data(), m_.output_norm, c.dim, c.rms_eps, r.norm_w.data());
    // Vocabulary-parallel LM head: this rank's slice of the shared logits (the all-gather).
    r.output.apply(r.h.data(), logits_.data() + r.vocab.begin, intra);
    if (op_tap_) {
      const std::string last = fmt::format("layer.{}.residual", c.n_layers - 1);
      record(r, -1, "output_norm", "engine:norm", {last}, OpShard::kWhole, r.h.data(), c.dim);
      record(r, -1, "lm_head", "kernel:gemm", {"output_norm"}, OpShard::kSlice, logits_.data() + r.vocab.begin,
             r.vocab.size(), r.vocab.begin, c.vocab);
    }
  }

  // Short causal depthwise convolution with SiLU over `n` channels; the window holds the
  // previous conv_size - 1 inputs per channel, oldest first.
  void conv(HybridRank& r, float* x, int64_t n, const Weight& w, float* window) const {
    const int taps = m_.config().conv_size;
    r.conv_row.resize(size_t(taps));
    float* wrow = r.conv_row.data();
    for (int64_t ch = 0; ch < n; ++ch) {
      w.dequantize_row(ch, wrow);
      float* win = window + size_t(ch) * size_t(taps - 1);
      float y = wrow[taps - 1] * x[ch];
      for (int j = 0; j < taps - 1; ++j) y += wrow[j] * win[j];
      for (int j = 0; j + 1 < taps - 1; ++j) win[j] = win[j + 1];
      if (taps > 1) win[taps - 2] = x[ch];
      x[ch] = silu(y);
    }
  }

  Status kda_mixer(HybridRank& r, int l, ThreadPool* intra) {
    RECUR_ZONE("kda_mixer");
    zone.arg("layer", l);
    const ModelConfig& c = m_.config();
    const LayerShard& S = r.layers[size_t(l)];
    const int64_t K = c.kda_head_dim, qk = S.k_heads.size() * K, vd = S.v_heads.size() * K;
    const int64_t q_off = S.k_heads.begin * K, v_off = S.v_heads.begin * K;
    const int64_t qk_all = int64_t(c.kda_key_heads) * K, v_all = int64_t(c.kda_heads) * K;
    const float* h = r.h.data();
    S.wq.apply(h, r.q.data(), intra);
    S.wk.apply(h, r.k.data(), intra);
    S.wv.apply(h, r.v.data(), intra);
    S.wf.apply(h, r.g.data(), intra);
    S.wb.apply(h, r.b.data(), intra);
    if (op_tap_) {
      const OpShard sl = OpShard::kSlice;
      record(r, l, "kda.q_proj", "kernel:gemm", {"attn_norm"}, sl, r.q.data(), qk, q_off, qk_all);
      record(r, l, "kda.k_proj", "kernel:gemm", {"attn_norm"}, sl, r.k.data(), qk, q_off, qk_all);
      record(r, l, "kda.v_proj", "kernel:gemm", {"attn_norm"}, sl, r.v.data(), vd, v_off, v_all);
      record(r, l, "kda.f_proj", "kernel:gemm", {"attn_norm"}, sl, r.g.data(), vd, v_off, v_all);
      record(r, l, "kda.b_proj", "kernel:gemm", {"attn_norm"}, sl, r.b.data(), S.v_heads.size(), S.v_heads.begin,
             c.kda_heads);
    }
    float* window = r.conv_state[size_t(l)].data();
    const size_t w = size_t(c.conv_size - 1);
    conv(r, r.q.data(), qk, S.conv_q, window);
    conv(r, r.k.data(), qk, S.conv_k, window + w * size_t(qk));
    conv(r, r.v.data(), vd, S.conv_v, window + 2 * w * size_t(qk));
    kda::Shape shape{.batch = 1, .tokens = 1, .hk = S.k_heads.size(), .hv = S.v_heads.size(), .k = K, .v = K};
    kda::Params params;
    params.gate = kda::GateForm::kSoftplus;
    params.block_v = int(std::min<int64_t>(64, K));
    kda::Inputs in{r.q.data(), r.k.data(), r.v.data(), r.g.data(), r.b.data(), S.a_log.data(), S.dt_bias.data()};
    {
      RECUR_ZONE("kda_decode");
      zone.arg("layer", l);
      zone.arg("heads", S.v_heads.size());
      zone.arg("variant", kda::decode_variant_name(variant_).data());
      RECUR_RETURN_IF_ERROR(kda::decode(shape, params, in, r.kda_state[size_t(l)].data(), r.o.data(), variant_, intra, r.ws));
    }
    // The convolutions and the recurrence count as one op: the KDA core.
    if (op_tap_)
      record(r, l, "kda.core", "kernel:kda_decode", {"kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.f_proj", "kda.b_proj"},
             OpShard::kSlice, r.o.data(), vd, v_off, v_all);
    // Gated RMSNorm per value head.
    S.out_gate.apply(h, r.gate.data(), intra);
    if (op_tap_)
      record(r, l, "kda.gate_proj", "kernel:gemm", {"attn_norm"}, OpShard::kSlice, r.gate.data(), vd, v_off, v_all);
    m_.layers[size_t(l)].out_norm.dequantize_row(0, r.norm_w.data());
    for (int64_t hd = 0; hd < S.v_heads.size(); ++hd) {
      float* o = r.o.data() + hd * K;
      double ss = 0;
      for (int64_t i = 0; i < K; ++i) ss += double(o[i]) * o[i];
      float inv = 1.0f / std::sqrt(float(ss / double(K)) + c.rms_eps);
      for (int64_t i = 0; i < K; ++i) o[i] = o[i] * inv * r.norm_w[size_t(i)] * sigmoid(r.gate[size_t(hd * K + i)]);
    }
    if (op_tap_)
      record(r, l, "kda.gated_norm", "engine:norm", {"kda.core", "kda.gate_proj"}, OpShard::kSlice, r.o.data(), vd,
             v_off, v_all);
    S.wo.apply(r.o.data(), r.partial.data(), intra);
    if (op_tap_)
      record(r, l, "kda.out_proj", "kernel:gemm", {"kda.gated_norm"}, OpShard::kPartial, r.partial.data(), c.dim);
    return ok_status();
  }

  void attention_mixer(HybridRank& r, int l, ThreadPool* intra) {
    RECUR_ZONE("attention");
    zone.arg("layer", l);
    zone.arg("tokens", pos_ + 1);
    const ModelConfig& c = m_.config();
    const LayerShard& S = r.layers[size_t(l)];
    const int hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
    const int64_t q_local = S.heads.size() * hd, kv_local = S.kv_heads.size() * hd;
    const float* h = r.h.data();
    S.wq.apply(h, r.q.data(), intra);
    S.wk.apply(h, r.k.data(), intra);
    S.wv.apply(h, r.v.data(), intra);
    if (op_tap_) {
      const OpShard sl = OpShard::kSlice;
      const int64_t q_all = int64_t(c.n_heads) * hd, kv_all = int64_t(c.n_kv_heads) * hd;
      record(r, l, "attn.q_proj", "kernel:gemm", {"attn_norm"}, sl, r.q.data(), q_local, S.heads.begin * hd, q_all);
      record(r, l, "attn.k_proj", "kernel:gemm", {"attn_norm"}, sl, r.k.data(), kv_local, S.kv_heads.begin * hd, kv_all);
      record(r, l, "attn.v_proj", "kernel:gemm", {"attn_norm"}, sl, r.v.data(), kv_local, S.kv_heads.begin * hd, kv_all);
    }
    rope_interleaved(r.q.data(), int(S.heads.size()), hd, pos_, c.rope_theta);
    rope_interleaved(r.k.data(), int(S.kv_heads.size()), hd, pos_, c.rope_theta);
    std::copy_n(r.k.begin(), kv_local, r.keys[size_t(l)].begin() + long(pos_ * kv_local));
    std::copy_n(r.v.begin(), kv_local, r.values[size_t(l)].begin() + long(pos_ * kv_local));
    attention_decode(r.q.data(), r.keys[size_t(l)].data(), r.values[size_t(l)].data(), int(S.heads.size()),
                     int(S.kv_heads.size()), hd, pos_ + 1, r.o.data(), r.att.data(), intra, group, int(S.heads.begin),
                     int(S.kv_heads.begin));
    if (op_tap_)
      record(r, l, "attn.core", "engine:attention", {"attn.q_proj", "attn.k_proj", "attn.v_proj"}, OpShard::kSlice,
             r.o.data(), q_local, S.heads.begin * hd, int64_t(c.n_heads) * hd);
    S.wo.apply(r.o.data(), r.partial.data(), intra);
    if (op_tap_) record(r, l, "attn.o_proj", "kernel:gemm", {"attn.core"}, OpShard::kPartial, r.partial.data(), c.dim);
  }

  // out += scale * (this rank's part of) down(silu(gate h) * up h).
  void swiglu_into(HybridRank& r, int l, const FfnShard& f, float scale, bool accumulate, ThreadPool* intra) {
    const int64_t n = f.gate.rows();
    f.gate.apply(r.h.data(), r.ff_a.data(), intra);
    f.up.apply(r.h.data(), r.ff_b.data(), intra);
    const bool dense = m_.config().n_experts == 0;
    if (op_tap_ && dense) {
      record(r, l, "ffn.gate", "kernel:gemm", {"ffn_norm"}, OpShard::kSlice, r.ff_a.data(), n, r.ffn.begin,
             m_.config().ffn_dim);
      record(r, l, "ffn.up", "kernel:gemm", {"ffn_norm"}, OpShard::kSlice, r.ff_b.data(), n, r.ffn.begin,
             m_.config().ffn_dim);
    }
    swiglu(r.ff_a.data(), r.ff_b.data(), int(n));
    if (op_tap_ && dense)
      record(r, l, "ffn.act", "engine:activation", {"ffn.gate", "ffn.up"}, OpShard::kSlice, r.ff_a.data(), n,
             r.ffn.begin, m_.config().ffn_dim);
    f.down.apply(r.ff_a.data(), r.tmp.data(), intra);
    for (size_t i = 0; i < r.partial.size(); ++i) r.partial[i] = (accumulate ? r.partial[i] : 0.0f) + scale * r.tmp[i];
  }

  void mlp(HybridRank& r, int l, ThreadPool* intra) {
    RECUR_ZONE("mlp");
    const ModelConfig& c = m_.config();
    const HybridLayerWeights& L = m_.layers[size_t(l)];
    const LayerShard& S = r.layers[size_t(l)];
    if (c.n_experts == 0) {
      swiglu_into(r, l, S.dense, 1.0f, false, intra);
      if (op_tap_) record(r, l, "ffn.down", "kernel:gemm", {"ffn.act"}, OpShard::kPartial, r.partial.data(), c.dim);
      return;
    }
    // The router stays fp32 on every rank (replicated): a flip in the top-k is a discontinuity.
    matvec(L.router, r.h.data(), r.router.data(), intra);
    if (op_tap_)
      record(r, l, "ffn.router", "engine:router", {"ffn_norm"}, OpShard::kWhole, r.router.data(), c.n_experts);
    Route route = route_top_k(r.router, c.n_experts_used);
    std::fill(r.partial.begin(), r.partial.end(), 0.0f);
    for (size_t i = 0; i < route.experts.size(); ++i)
      swiglu_into(r, l, S.experts[size_t(route.experts[i])], route.weights[i], true, intra);
    if (c.shared_expert) swiglu_into(r, l, S.shared, 1.0f, true, intra);
    if (op_tap_)
      record(r, l, "ffn.moe", "kernel:gemm", {"ffn_norm", "ffn.router"}, OpShard::kPartial, r.partial.data(), c.dim);
  }

  const HybridModel& m_;
  ThreadPool& pool_;
  int max_tokens_;
  kda::DecodeVariant variant_;
  int pos_ = 0;
  std::vector<std::unique_ptr<HybridRank>> ranks_;
  std::unique_ptr<RankRunner> runner_;  // tp > 1
  std::vector<float> logits_;  // all-gathered: each rank writes its vocabulary slice
};

}  // namespace

Result<std::unique_ptr<Session>> HybridModel::new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const {
  if (max_tokens <= 0 || max_tokens > config_.context)
    return invalid_argument("session of {} tokens (the context is {})", max_tokens, config_.context);
  RECUR_ASSIGN_OR_RETURN(std::string numerics, knobs.get("engine.numerics"));
  if (numerics == "f64_reference") return new_reference_session(file_, config_, max_tokens);
  RECUR_ASSIGN_OR_RETURN(int64_t tp, knobs.get_int("engine.tp"));
  RECUR_ASSIGN_OR_RETURN(ReduceDtype reduce, reduce_dtype_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(gemm::Precision precision, gemm::precision_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(std::string name, knobs.get("engine.kda.decode_variant"));
  auto variant = kda::parse_decode_variant(name);
  if (!variant) return invalid_argument("engine.kda.decode_variant '{}' is not a KDA decode variant", name);
  RECUR_ASSIGN_OR_RETURN(auto session,
                         HybridSession::create(*this, pool, max_tokens, *variant, int(tp), reduce, precision));
  return std::unique_ptr<Session>(std::move(session));
}

Result<std::unique_ptr<HybridModel>> HybridModel::from_file(gguf::File file) {
  std::unique_ptr<HybridModel> m(new HybridModel());
  m->file_ = std::move(file);
  const gguf::File& f = m->file_;
  RECUR_ASSIGN_OR_RETURN(m->config_, ModelConfig::from_gguf(f));
  const ModelConfig& c = m->config_;
  if (c.arch != Arch::kHybrid) return invalid_argument("{}: architecture is {}, not hybrid", f.source(), arch_name(c.arch));
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::from_gguf(f));
  if (int(vocab.tokens.size()) != c.vocab)
    return parse_error("{}: {} tokens in the vocabulary but vocab_size is {}", f.source(), vocab.tokens.size(), c.vocab);
  RECUR_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::create(std::move(vocab)));

  const int64_t K = c.kda_head_dim, qk = c.kda_key_heads * K, vd = c.kda_heads * K;
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  RECUR_ASSIGN_OR_RETURN(m->token_embedding, bind_weight(f, "token_embd.weight", c.vocab, c.dim));
  RECUR_ASSIGN_OR_RETURN(m->output_norm, bind_weight(f, "output_norm.weight", 1, c.dim));
  if (c.tied_embeddings) m->output = m->token_embedding;
  else {
    RECUR_ASSIGN_OR_RETURN(m->output, bind_weight(f, "output.weight", c.vocab, c.dim));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    auto bind = [&](Weight& w, const char* name, int64_t rows, int64_t cols) -> Status {
      RECUR_ASSIGN_OR_RETURN(w, bind_weight(f, p + name, rows, cols));
      return ok_status();
    };
    HybridLayerWeights L;
    L.kda = c.is_kda_layer(l);
    RECUR_RETURN_IF_ERROR(bind(L.attn_norm, "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.ffn_norm, "ffn_norm.weight", 1, c.dim));
    if (L.kda) {
      RECUR_RETURN_IF_ERROR(bind(L.wq, "kda_q.weight", qk, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wk, "kda_k.weight", qk, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wv, "kda_v.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.conv_q, "kda_conv_q.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.conv_k, "kda_conv_k.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.conv_v, "kda_conv_v.weight", vd, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.wf, "kda_f.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.a_log, "kda_a_log", 1, c.kda_heads));
      RECUR_RETURN_IF_ERROR(bind(L.dt_bias, "kda_dt_bias", 1, vd));
      RECUR_RETURN_IF_ERROR(bind(L.wb, "kda_b.weight", c.kda_heads, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_gate, "kda_out_gate.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_norm, "kda_out_norm.weight", 1, K));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, vd));
    } else {
      RECUR_RETURN_IF_ERROR(bind(L.wq, "attn_q.weight", q_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wk, "attn_k.weight", kv_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wv, "attn_v.weight", kv_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, q_dim));
    }
    if (c.n_experts == 0) {
      RECUR_RETURN_IF_ERROR(bind(L.w_gate, "ffn_gate.weight", c.ffn_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.w_up, "ffn_up.weight", c.ffn_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.w_down, "ffn_down.weight", c.dim, c.ffn_dim));
    } else {
      RECUR_RETURN_IF_ERROR(bind(L.router, "ffn_gate_inp.weight", c.n_experts, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.exp_gate, bind_experts(f, p + "ffn_gate_exps.weight", c.n_experts, c.ffn_dim, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.exp_up, bind_experts(f, p + "ffn_up_exps.weight", c.n_experts, c.ffn_dim, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.exp_down, bind_experts(f, p + "ffn_down_exps.weight", c.n_experts, c.dim, c.ffn_dim));
      if (c.shared_expert) {
        RECUR_RETURN_IF_ERROR(bind(L.sh_gate, "ffn_gate_shexp.weight", c.ffn_dim, c.dim));
        RECUR_RETURN_IF_ERROR(bind(L.sh_up, "ffn_up_shexp.weight", c.ffn_dim, c.dim));
        RECUR_RETURN_IF_ERROR(bind(L.sh_down, "ffn_down_shexp.weight", c.dim, c.ffn_dim));
      }
    }
    m->layers.push_back(std::move(L));
  }
  return m;
}

}  // namespace recur
