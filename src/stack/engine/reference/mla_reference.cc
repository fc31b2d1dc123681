#include "engine/reference/mla_reference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/reference/expert_routing.h"
#include "engine/reference/reference_session.h"
#include "engine/weights.h"
#include "kernels/kda/kda_reference.h"
#include "kernels/mla/mla_reference.h"

namespace recur {

namespace {

using Vec = std::vector<double>;

class Deepseek2Reference {
 public:
  Deepseek2Reference(const gguf::File& f, const ModelConfig& c)
      : f_(f), c_(c), latents_(size_t(c.n_layers)), state_(size_t(c.n_layers)), window_(size_t(c.n_layers)) {}

  Vec step(int token) {
    const int d = c_.dim;
    const Vec& embd = widened("token_embd.weight");
    Vec x(embd.begin() + int64_t(token) * d, embd.begin() + int64_t(token + 1) * d);
    for (int l = 0; l < c_.n_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const Vec h = rms(x, p + "attn_norm.weight");
      add(x, c_.is_kda_layer(l) ? kda(l, p, h) : attention(l, p, h));
      add(x, ffn(l, p, rms(x, p + "ffn_norm.weight")));
    }
    ++pos_;
    return mat(c_.tied_embeddings ? "token_embd.weight" : "output.weight", rms(x, "output_norm.weight"), 0, c_.vocab);
  }

 private:
  // The tensor's values in double, rows one after another (any rank).
  const Vec& widened(const std::string& name) {
    if (auto it = cache_.find(name); it != cache_.end()) return it->second;
    const gguf::TensorInfo* t = f_.tensor(name);  // the model bound every tensor at load
    int64_t rows = 1;
    for (size_t i = 1; i < t->dims.size(); ++i) rows *= int64_t(t->dims[i]);
    Weight w{name, t->type, rows, int64_t(t->dims[0]), t->data};
    if (const gguf::TensorInfo* s = f_.tensor(name + ".scale"); t->type == gguf::TensorType::kI8 && s != nullptr)
      w.scale = reinterpret_cast<const float*>(s->data);
    std::vector<float> row(static_cast<size_t>(w.cols));
    Vec& out = cache_[name];
    for (int64_t r = 0; r < rows; ++r) {
      w.dequantize_row(r, row.data());
      out.insert(out.end(), row.begin(), row.end());
    }
    return out;
  }
  bool has(const std::string& name) const { return f_.tensor(name) != nullptr; }

  static void add(Vec& x, const Vec& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }
  // rows [row0, row0 + rows) of W times x.
  Vec mat(const std::string& name, const Vec& x, int64_t row0, int64_t rows) {
    const Vec& w = widened(name);
    Vec y(static_cast<size_t>(rows), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (size_t k = 0; k < x.size(); ++k) y[size_t(r)] += w[size_t((row0 + r) * int64_t(x.size())) + k] * x[k];
    return y;
  }
  Vec rms(const Vec& x, const std::string& weight) {
    const Vec& w = widened(weight);
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1 / std::sqrt(ss / double(x.size()) + c_.rms_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
    return y;
  }

  // DeepSeek's YaRN: each pair's inverse frequency blended between the original and it / factor.
  void rope(double* v) const {
    const int E = c_.qk_rope_dim;
    const double theta = c_.rope_theta, f = c_.rope_yarn_factor;
    double low = 0, high = 0;
    if (f > 1) {
      auto dim_of = [&](double rot) {
        return E * std::log(c_.rope_original_context / (rot * 2 * M_PI)) / (2 * std::log(theta));
      };
      low = std::max(0.0, std::floor(dim_of(c_.rope_yarn_beta_fast)));
      high = std::min(double(E - 1), std::ceil(dim_of(c_.rope_yarn_beta_slow)));
    }
    for (int i = 0; i < E / 2; ++i) {
      double inv = std::pow(theta, -2.0 * i / E);
      if (f > 1) {
        const double mask = 1 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
        inv = inv / f * (1 - mask) + inv * mask;
      }
      const double a = pos_ * inv, x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * std::cos(a) - x1 * std::sin(a);
      v[2 * i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
    }
  }

  Vec attention(int l, const std::string& p, const Vec& h) {
    const int H = c_.n_heads, N = c_.qk_nope_dim, E = c_.qk_rope_dim, R = c_.kv_lora_rank, V = c_.v_head_dim;
    const kernels::mla::Dims d{.heads = H, .nope = N, .rope = E, .rank = R, .v_dim = V};
    Vec q = c_.q_lora_rank > 0
                ? mat(p + "attn_q_b.weight", rms(mat(p + "attn_q_a.weight", h, 0, c_.q_lora_rank), p + "attn_q_a_norm.weight"),
                      0, int64_t(H) * (N + E))
                : mat(p + "attn_q.weight", h, 0, int64_t(H) * (N + E));
    Vec kv = mat(p + "attn_kv_a_mqa.weight", h, 0, R + E);
    Vec latent = rms(Vec(kv.begin(), kv.begin() + R), p + "attn_kv_a_norm.weight");
    latent.insert(latent.end(), kv.begin() + R, kv.end());
    if (c_.mla_rope) {  // kimi-linear's MLA uses its rope part unrotated
      rope(latent.data() + R);
      for (int hd = 0; hd < H; ++hd) rope(q.data() + int64_t(hd) * (N + E) + N);
    }
    Vec& cached = latents_[size_t(l)];
    cached.insert(cached.end(), latent.begin(), latent.end());
    const auto [wk, wv] = up_projections(p);
    const double factor = c_.rope_yarn_factor;
    const double m = factor > 1 ? 1 + double(c_.rope_yarn_log_mul) * std::log(factor) : 1.0;
    const double scale = m * m / std::sqrt(double(N + E));
    Vec o(size_t(H) * size_t(V));
    for (int hd = 0; hd < H; ++hd)
      kernels::mla::reference_row(q.data() + int64_t(hd) * (N + E), cached.data(), pos_ + 1,
                                  wk->data() + int64_t(hd) * R * N, wv->data() + int64_t(hd) * V * R, d, scale,
                                  o.data() + int64_t(hd) * V, nullptr);
    return mat(p + "attn_output.weight", o, 0, c_.dim);
  }

  // kimi-linear's KDA layer (kimi_linear.h), written from Kimi's modeling code: q, k, v through
  // the causal depthwise convolution + SiLU, g = -exp(A_log) softplus(f_b f_a h + dt_bias)
  // (ssm_a holds -exp(A_log)), beta = sigmoid(W_beta h), the KDA recurrence (kda_reference.h:
  // L2-normed q, k, q scaled by K^-1/2), then RMSNorm(o_h) * w * sigmoid(g_b g_a h).
  Vec kda(int l, const std::string& p, const Vec& h) {
    const int K = c_.kda_head_dim, H = c_.kda_heads, D = H * K, taps = c_.conv_size;
    Vec& win = window_[size_t(l)];
    if (win.empty()) win.assign(size_t(3 * D * (taps - 1)), 0.0);
    auto conv = [&](Vec x, const char* name, size_t part) {
      const Vec& w = widened(p + name);  // [channels, taps]
      double* wn = win.data() + part * size_t(D * (taps - 1));
      for (int ch = 0; ch < D; ++ch) {
        double y = w[size_t(ch * taps + taps - 1)] * x[size_t(ch)];
        for (int j = 0; j + 1 < taps; ++j) y += w[size_t(ch * taps + j)] * wn[ch * (taps - 1) + j];
        for (int j = 0; j + 2 < taps; ++j) wn[ch * (taps - 1) + j] = wn[ch * (taps - 1) + j + 1];
        if (taps > 1) wn[ch * (taps - 1) + taps - 2] = x[size_t(ch)];
        x[size_t(ch)] = y / (1 + std::exp(-y));
      }
      return x;
    };
    const Vec q = conv(mat(p + "attn_q.weight", h, 0, D), "ssm_conv1d_q.weight", 0);
    const Vec k = conv(mat(p + "attn_k.weight", h, 0, D), "ssm_conv1d_k.weight", 1);
    const Vec v = conv(mat(p + "attn_v.weight", h, 0, D), "ssm_conv1d_v.weight", 2);
    const Vec g = mat(p + "ssm_f_b.weight", mat(p + "ssm_f_a.weight", h, 0, K), 0, D);
    const Vec b = mat(p + "ssm_beta.weight", h, 0, H);
    Vec a_log = widened(p + "ssm_a");
    for (double& a : a_log) a = std::log(-a);
    const Vec& dt = widened(p + "ssm_dt.bias");
    std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end()), gf(g.begin(), g.end()),
        bf(b.begin(), b.end()), af(a_log.begin(), a_log.end()), dtf(dt.begin(), dt.end());
    kda::Shape shape{.batch = 1, .tokens = 1, .hk = H, .hv = H, .k = K, .v = K};
    kda::Inputs in{qf.data(), kf.data(), vf.data(), gf.data(), bf.data(), af.data(), dtf.data()};
    Vec& state = state_[size_t(l)];
    if (state.empty()) state.assign(size_t(H) * K * K, 0.0);
    Vec o;
    kda::reference_forward(shape, kda::Params{}, in, state, o);
    const Vec gate = mat(p + "ssm_g_b.weight", mat(p + "ssm_g_a.weight", h, 0, K), 0, D);
    const Vec& w_norm = widened(p + "ssm_norm.weight");
    for (int hd = 0; hd < H; ++hd) {
      double ss = 0;
      for (int i = 0; i < K; ++i) ss += o[size_t(hd * K + i)] * o[size_t(hd * K + i)];
      const double inv = 1 / std::sqrt(ss / K + c_.rms_eps);
      for (int i = 0; i < K; ++i)
        o[size_t(hd * K + i)] *= inv * w_norm[size_t(i)] / (1 + std::exp(-gate[size_t(hd * K + i)]));
    }
    return mat(p + "attn_output.weight", o, 0, c_.dim);
  }

  // W_UK^T [heads, rank, nope] and W_UV [heads, v, rank]: attn_k_b / attn_v_b, or cut from attn_kv_b.
  std::pair<const Vec*, const Vec*> up_projections(const std::string& p) {
    if (has(p + "attn_k_b.weight")) return {&widened(p + "attn_k_b.weight"), &widened(p + "attn_v_b.weight")};
    const int64_t H = c_.n_heads, N = c_.qk_nope_dim, R = c_.kv_lora_rank, V = c_.v_head_dim;
    Vec& wk = cache_[p + "W_UK"];
    Vec& wv = cache_[p + "W_UV"];
    if (wk.empty()) {
      const Vec& kv_b = widened(p + "attn_kv_b.weight");  // [heads * (nope + v), rank]
      wk.resize(size_t(H * R * N));
      wv.resize(size_t(H * V * R));
      for (int64_t h = 0; h < H; ++h)
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t n = 0; n < N; ++n) wk[size_t((h * R + r) * N + n)] = kv_b[size_t((h * (N + V) + n) * R + r)];
          for (int64_t v = 0; v < V; ++v) wv[size_t((h * V + v) * R + r)] = kv_b[size_t((h * (N + V) + N + v) * R + r)];
        }
    }
    return {&wk, &wv};
  }

  Vec swiglu(const std::string& p, const char* kind, const Vec& h, int64_t width, int64_t expert) {
    const std::string s(kind);
    Vec g = mat(p + "ffn_gate" + s + ".weight", h, expert * width, width);
    const Vec u = mat(p + "ffn_up" + s + ".weight", h, expert * width, width);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    return mat(p + "ffn_down" + s + ".weight", g, expert * c_.dim, c_.dim);
  }

  Vec ffn(int l, const std::string& p, const Vec& h) {
    if (c_.is_dense_ffn_layer(l)) return swiglu(p, "", h, c_.dense_ffn_dim, 0);
    const int E = c_.n_experts;
    const Vec logits = mat(p + "ffn_gate_inp.weight", h, 0, E);
    const std::string bias = p + "exp_probs_b.bias";
    Vec out(size_t(c_.dim), 0.0);
    for (const auto& [e, w] : route_experts(c_, logits, has(bias) ? &widened(bias) : nullptr)) {
      const Vec y = swiglu(p, "_exps", h, c_.ffn_dim, e);
      for (int i = 0; i < c_.dim; ++i) out[size_t(i)] += w * y[size_t(i)];
    }
    if (c_.shared_expert) add(out, swiglu(p, "_shexp", h, c_.shared_width(), 0));
    return out;
  }

  const gguf::File& f_;
  ModelConfig c_;
  int pos_ = 0;
  std::map<std::string, Vec> cache_;
  std::vector<Vec> latents_;  // per layer: [tokens, rank + rope]
  std::vector<Vec> state_, window_;  // KDA layers: the recurrent state and the conv windows
};


}  // namespace

std::unique_ptr<Session> new_mla_reference_session(const gguf::File& file, const ModelConfig& config, int max_tokens) {
  return std::make_unique<ReferenceSession<Deepseek2Reference>>(file, config, max_tokens);
}

}  // namespace recur
