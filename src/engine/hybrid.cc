#include "engine/hybrid.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/thread_pool.h"
#include "engine/layers.h"
#include "kernels/kda/kda.h"
#include "trace/trace.h"

namespace recur {

RECUR_KNOB(engine_kda_decode_variant,
           {.name = "engine.kda.decode_variant", .type = KnobType::kEnum, .choices = {"vtile", "vtile_recip", "hoisted"},
            .default_value = "hoisted", .components = {"kernel:kda_decode"},
            .help = "KDA decode work split: prologue per V-tile (vtile, vtile_recip) or once per head (hoisted)"});

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

class HybridSession final : public Session {
 public:
  HybridSession(const HybridModel& m, ThreadPool& pool, int max_tokens, kda::DecodeVariant variant)
      : m_(m), pool_(pool), max_tokens_(max_tokens), variant_(variant) {
    const ModelConfig& c = m.config();
    const int K = c.kda_head_dim;
    qk_dim_ = c.kda_key_heads * K;
    v_dim_ = c.kda_heads * K;
    const int q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
    const int widest = std::max({c.dim, q_dim, v_dim_, qk_dim_, c.kda_heads * K, c.ffn_dim});
    x_.resize(c.dim);
    h_.resize(c.dim);
    tmp_.resize(widest);
    norm_w_.resize(widest);
    q_.resize(std::max(q_dim, qk_dim_));
    k_.resize(std::max(kv_dim, qk_dim_));
    v_.resize(std::max(kv_dim, v_dim_));
    g_.resize(size_t(c.kda_heads) * K);
    b_.resize(c.kda_heads);
    o_.resize(std::max(q_dim, v_dim_));
    gate_.resize(v_dim_);
    ff_a_.resize(c.ffn_dim);
    ff_b_.resize(c.ffn_dim);
    ff_acc_.resize(c.dim);
    if (c.n_experts > 0) router_.resize(c.n_experts);
    att_.resize(size_t(c.n_heads) * max_tokens);
    logits_.resize(c.vocab);
    for (int l = 0; l < c.n_layers; ++l) {
      if (c.is_kda_layer(l)) {
        kda_state_.emplace_back(size_t(c.kda_heads) * K * K, 0.0f);
        conv_state_.emplace_back(size_t(c.conv_size - 1) * (2 * qk_dim_ + v_dim_), 0.0f);
        keys_.emplace_back();
        values_.emplace_back();
      } else {
        kda_state_.emplace_back();
        conv_state_.emplace_back();
        keys_.emplace_back(size_t(max_tokens) * kv_dim, 0.0f);
        values_.emplace_back(size_t(max_tokens) * kv_dim, 0.0f);
      }
    }
  }

  int position() const override { return pos_; }

  Result<std::span<const float>> step(TokenId token) override {
    const ModelConfig& c = m_.config();
    if (token < 0 || token >= c.vocab) return invalid_argument("token {} outside the vocabulary of {}", token, c.vocab);
    if (pos_ >= max_tokens_) return invalid_argument("sequence is full ({} tokens)", max_tokens_);
    m_.token_embedding.dequantize_row(token, x_.data());
    RECUR_ZONE("step");
    zone.arg("pos", pos_);
    for (int l = 0; l < c.n_layers; ++l) {
      RECUR_ZONE("layer");
      zone.arg("layer", l);
      zone.arg("kind", m_.layers[size_t(l)].kda ? "kda" : "attention");
      const HybridLayerWeights& L = m_.layers[size_t(l)];
      rmsnorm(h_.data(), x_.data(), L.attn_norm, c.dim, c.rms_eps, norm_w_.data());
      if (L.kda) {
        RECUR_RETURN_IF_ERROR(kda_mixer(l, L));
      } else {
        attention_mixer(l, L);
      }
      for (int i = 0; i < c.dim; ++i) x_[i] += tmp_[i];
      rmsnorm(h_.data(), x_.data(), L.ffn_norm, c.dim, c.rms_eps, norm_w_.data());
      mlp(L);
      for (int i = 0; i < c.dim; ++i) x_[i] += ff_acc_[i];
      if (observer_) observer_(l, x_);
    }
    rmsnorm(h_.data(), x_.data(), m_.output_norm, c.dim, c.rms_eps, norm_w_.data());
    matvec(m_.output, h_.data(), logits_.data(), pool_);
    ++pos_;
    return std::span<const float>(logits_);
  }

 private:
  // Short causal depthwise convolution with SiLU over `n` channels; the window holds the
  // previous conv_size - 1 inputs per channel, oldest first.
  void conv(float* x, int n, const Weight& w, float* window) {
    const int taps = m_.config().conv_size;
    std::vector<float>& wrow = conv_row_;
    wrow.resize(size_t(taps));
    for (int ch = 0; ch < n; ++ch) {
      w.dequantize_row(ch, wrow.data());
      float* win = window + size_t(ch) * (taps - 1);
      float y = wrow[size_t(taps - 1)] * x[ch];
      for (int j = 0; j < taps - 1; ++j) y += wrow[size_t(j)] * win[j];
      for (int j = 0; j + 1 < taps - 1; ++j) win[j] = win[j + 1];
      if (taps > 1) win[taps - 2] = x[ch];
      x[ch] = silu(y);
    }
  }

  Status kda_mixer(int l, const HybridLayerWeights& L) {
    RECUR_ZONE("kda_mixer");
    zone.arg("layer", l);
    const ModelConfig& c = m_.config();
    const int K = c.kda_head_dim;
    matvec(L.wq, h_.data(), q_.data(), pool_);
    matvec(L.wk, h_.data(), k_.data(), pool_);
    matvec(L.wv, h_.data(), v_.data(), pool_);
    float* window = conv_state_[size_t(l)].data();
    const size_t w = size_t(c.conv_size - 1);
    conv(q_.data(), qk_dim_, L.conv_q, window);
    conv(k_.data(), qk_dim_, L.conv_k, window + w * qk_dim_);
    conv(v_.data(), v_dim_, L.conv_v, window + 2 * w * qk_dim_);
    matvec(L.wf, h_.data(), g_.data(), pool_);
    matvec(L.wb, h_.data(), b_.data(), pool_);
    a_log_.resize(size_t(c.kda_heads));
    dt_bias_.resize(size_t(c.kda_heads) * K);
    L.a_log.dequantize_row(0, a_log_.data());
    L.dt_bias.dequantize_row(0, dt_bias_.data());
    kda::Shape shape{.batch = 1, .tokens = 1, .hk = c.kda_key_heads, .hv = c.kda_heads, .k = K, .v = K};
    kda::Params params;
    params.gate = kda::GateForm::kSoftplus;
    params.block_v = std::min(64, K);
    kda::Inputs in{q_.data(), k_.data(), v_.data(), g_.data(), b_.data(), a_log_.data(), dt_bias_.data()};
    {
      RECUR_ZONE("kda_decode");
      zone.arg("layer", l);
      zone.arg("heads", int64_t(c.kda_heads));
      zone.arg("variant", kda::decode_variant_name(variant_).data());
      RECUR_RETURN_IF_ERROR(kda::decode(shape, params, in, kda_state_[size_t(l)].data(), o_.data(), variant_, &pool_, ws_));
    }
    // Gated RMSNorm per value head.
    matvec(L.out_gate, h_.data(), gate_.data(), pool_);
    L.out_norm.dequantize_row(0, norm_w_.data());
    for (int hd = 0; hd < c.kda_heads; ++hd) {
      float* o = o_.data() + size_t(hd) * K;
      double ss = 0;
      for (int i = 0; i < K; ++i) ss += double(o[i]) * o[i];
      float inv = 1.0f / std::sqrt(float(ss / K) + c.rms_eps);
      for (int i = 0; i < K; ++i) o[i] = o[i] * inv * norm_w_[size_t(i)] * sigmoid(gate_[size_t(hd) * K + i]);
    }
    matvec(L.wo, o_.data(), tmp_.data(), pool_);
    return ok_status();
  }

  void attention_mixer(int l, const HybridLayerWeights& L) {
    RECUR_ZONE("attention");
    zone.arg("layer", l);
    zone.arg("tokens", pos_ + 1);
    const ModelConfig& c = m_.config();
    const size_t kv_dim = size_t(c.n_kv_heads) * c.head_dim;
    matvec(L.wq, h_.data(), q_.data(), pool_);
    matvec(L.wk, h_.data(), k_.data(), pool_);
    matvec(L.wv, h_.data(), v_.data(), pool_);
    rope_interleaved(q_.data(), c.n_heads, c.head_dim, pos_, c.rope_theta);
    rope_interleaved(k_.data(), c.n_kv_heads, c.head_dim, pos_, c.rope_theta);
    std::copy_n(k_.begin(), kv_dim, keys_[size_t(l)].begin() + long(size_t(pos_) * kv_dim));
    std::copy_n(v_.begin(), kv_dim, values_[size_t(l)].begin() + long(size_t(pos_) * kv_dim));
    attention_decode(q_.data(), keys_[size_t(l)].data(), values_[size_t(l)].data(), c.n_heads, c.n_kv_heads,
                     c.head_dim, pos_ + 1, o_.data(), att_.data(), &pool_);
    matvec(L.wo, o_.data(), tmp_.data(), pool_);
  }

  // ff_acc_ = sum over chosen experts of weight * expert(h), plus the shared expert; or dense.
  void swiglu_into(const Weight& gate, const Weight& up, const Weight& down, float scale, bool accumulate) {
    matvec(gate, h_.data(), ff_a_.data(), pool_);
    matvec(up, h_.data(), ff_b_.data(), pool_);
    swiglu(ff_a_.data(), ff_b_.data(), int(gate.rows));
    matvec(down, ff_a_.data(), tmp_.data(), pool_);
    for (int i = 0; i < m_.config().dim; ++i) ff_acc_[size_t(i)] = (accumulate ? ff_acc_[size_t(i)] : 0.0f) + scale * tmp_[size_t(i)];
  }

  void mlp(const HybridLayerWeights& L) {
    RECUR_ZONE("mlp");
    const ModelConfig& c = m_.config();
    if (c.n_experts == 0) {
      swiglu_into(L.w_gate, L.w_up, L.w_down, 1.0f, false);
      return;
    }
    matvec(L.router, h_.data(), router_.data(), pool_);
    Route r = route_top_k(router_, c.n_experts_used);
    std::fill(ff_acc_.begin(), ff_acc_.end(), 0.0f);
    for (size_t i = 0; i < r.experts.size(); ++i) {
      size_t e = size_t(r.experts[i]);
      swiglu_into(L.exp_gate[e], L.exp_up[e], L.exp_down[e], r.weights[i], true);
    }
    if (c.shared_expert) swiglu_into(L.sh_gate, L.sh_up, L.sh_down, 1.0f, true);
  }

  const HybridModel& m_;
  ThreadPool& pool_;
  int max_tokens_;
  kda::DecodeVariant variant_;
  int pos_ = 0;
  int qk_dim_ = 0, v_dim_ = 0;
  kda::Workspace ws_;
  std::vector<float> x_, h_, tmp_, norm_w_, q_, k_, v_, g_, b_, o_, gate_, ff_a_, ff_b_, ff_acc_, router_, att_, logits_;
  std::vector<float> a_log_, dt_bias_, conv_row_;
  std::vector<std::vector<float>> kda_state_, conv_state_, keys_, values_;
};

}  // namespace

Result<std::unique_ptr<Session>> HybridModel::new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const {
  if (max_tokens <= 0 || max_tokens > config_.context)
    return invalid_argument("session of {} tokens (the context is {})", max_tokens, config_.context);
  RECUR_ASSIGN_OR_RETURN(int64_t tp, knobs.get_int("engine.tp"));
  if (tp != 1)
    return unsupported("engine.tp={}: tensor parallelism runs the llama architecture so far; hybrid runs tp=1", tp);
  RECUR_ASSIGN_OR_RETURN(std::string name, knobs.get("engine.kda.decode_variant"));
  auto variant = kda::parse_decode_variant(name);
  if (!variant) return invalid_argument("engine.kda.decode_variant '{}' is not a KDA decode variant", name);
  return std::unique_ptr<Session>(new HybridSession(*this, pool, max_tokens, *variant));
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
