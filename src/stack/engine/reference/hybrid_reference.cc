#include "engine/reference/hybrid_reference.h"

#include <algorithm>
#include <cmath>

#include "core/knobs.h"
#include "engine/reference/expert_routing.h"
#include "engine/reference/reference_session.h"
#include "engine/weights.h"
#include "kernels/kda/kda_reference.h"

namespace recur {

namespace {

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }


}  // namespace

std::unique_ptr<Session> new_reference_session(const gguf::File& file, const ModelConfig& config, int max_tokens) {
  return std::make_unique<ReferenceSession<HybridReference>>(file, config, max_tokens);
}

HybridReference::HybridReference(const gguf::File& f, const ModelConfig& c) : file_(f), c_(c) {
  for (int l = 0; l < c.n_layers; ++l) {
    const int K = c.kda_head_dim;
    state_.emplace_back(size_t(c.kda_heads) * K * K, 0.0);
    window_.emplace_back(size_t(c.conv_size - 1) * size_t(2 * c.kda_key_heads * K + c.kda_heads * K), 0.0);
  }
  keys_.resize(size_t(c.n_layers));
  values_.resize(size_t(c.n_layers));
}

const std::vector<double>& HybridReference::tensor(const std::string& name) {
  auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  const gguf::TensorInfo* t = file_.tensor(name);  // the model bound every tensor at load
  int64_t rows = 1;
  for (size_t d = 1; d < t->dims.size(); ++d) rows *= int64_t(t->dims[d]);
  Weight w{name, t->type, rows, int64_t(t->dims[0]), t->data};
  // W8A8: the model's load checked <name>.scale (one F32 per row of every stacked matrix).
  if (const gguf::TensorInfo* s = file_.tensor(name + ".scale"); t->type == gguf::TensorType::kI8 && s != nullptr)
    w.scale = reinterpret_cast<const float*>(s->data);
  std::vector<float> row(size_t(w.cols));
  std::vector<double>& out = tensors_[name];
  out.reserve(size_t(rows * w.cols));
  for (int64_t r = 0; r < rows; ++r) {
    w.dequantize_row(r, row.data());
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

std::vector<double> HybridReference::step(int token) {
  const int d = c_.dim;
  const std::vector<double>& embd = tensor("token_embd.weight");
  std::vector<double> x(embd.begin() + int64_t(token) * d, embd.begin() + int64_t(token + 1) * d);
  if (c_.scale_embeddings)
    for (double& v : x) v *= std::sqrt(double(float(d)));
  for (int l = 0; l < c_.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    std::vector<double> h = norm(x, p + "attn_norm.weight");
    std::vector<double> mix = c_.is_kda_layer(l) ? kda(l, p, h) : attention(l, p, h);
    if (c_.post_norms) mix = norm(mix, p + "post_attention_norm.weight");
    for (int i = 0; i < d; ++i) x[size_t(i)] += mix[size_t(i)];
    h = norm(x, p + "ffn_norm.weight");
    std::vector<double> ff = mlp(p, h);
    if (c_.post_norms) ff = norm(ff, p + "post_ffw_norm.weight");
    for (int i = 0; i < d; ++i) x[size_t(i)] += ff[size_t(i)];
  }
  ++pos_;
  std::vector<double> logits =
      mat(c_.tied_embeddings ? "token_embd.weight" : "output.weight", norm(x, "output_norm.weight"), c_.vocab, 0);
  if (c_.final_softcap > 0)
    for (double& v : logits) v = c_.final_softcap * std::tanh(v / c_.final_softcap);
  return logits;
}

std::vector<double> HybridReference::mat(const std::string& name, const std::vector<double>& x, int rows,
                                         int64_t offset) {
  const std::vector<double>& w = tensor(name);
  std::vector<double> y(size_t(rows), 0.0);
  for (int r = 0; r < rows; ++r)
    for (size_t k = 0; k < x.size(); ++k) y[size_t(r)] += w[size_t(offset + r * int64_t(x.size())) + k] * x[k];
  return y;
}

std::vector<double> HybridReference::norm(const std::vector<double>& x, const std::string& name) {
  const std::vector<double>& w = tensor(name);
  double ss = 0;
  for (double v : x) ss += v * v;
  double inv = 1 / std::sqrt(ss / double(x.size()) + c_.rms_eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
  return y;
}

void HybridReference::conv(std::vector<double>& x, const std::string& name, double* win) {
  const std::vector<double>& w = tensor(name);
  const size_t taps = size_t(c_.conv_size);
  for (size_t ch = 0; ch < x.size(); ++ch) {
    double y = w[ch * taps + taps - 1] * x[ch];
    for (size_t j = 0; j + 1 < taps; ++j) y += w[ch * taps + j] * win[ch * (taps - 1) + j];
    for (size_t j = 0; j + 2 < taps; ++j) win[ch * (taps - 1) + j] = win[ch * (taps - 1) + j + 1];
    if (taps > 1) win[ch * (taps - 1) + taps - 2] = x[ch];
    x[ch] = y * sigmoid(y);
  }
}

std::vector<double> HybridReference::kda(int l, const std::string& p, const std::vector<double>& h) {
  const int K = c_.kda_head_dim, HV = c_.kda_heads, HK = c_.kda_key_heads, qk = HK * K, vd = HV * K;
  std::vector<double> q = mat(p + "kda_q.weight", h, qk, 0), k = mat(p + "kda_k.weight", h, qk, 0),
                      v = mat(p + "kda_v.weight", h, vd, 0);
  double* win = window_[size_t(l)].data();
  const size_t span = size_t(c_.conv_size - 1);
  conv(q, p + "kda_conv_q.weight", win);
  conv(k, p + "kda_conv_k.weight", win + span * size_t(qk));
  conv(v, p + "kda_conv_v.weight", win + 2 * span * size_t(qk));
  std::vector<double> g = mat(p + "kda_f.weight", h, vd, 0), b = mat(p + "kda_b.weight", h, HV, 0);
  // kda::reference_forward takes fp32 inputs.
  const std::vector<double>&a_log = tensor(p + "kda_a_log"), &dt = tensor(p + "kda_dt_bias");
  std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end()), gf(g.begin(), g.end()),
      bf(b.begin(), b.end()), af(a_log.begin(), a_log.end()), dtf(dt.begin(), dt.end());
  kda::Shape shape{.batch = 1, .tokens = 1, .hk = HK, .hv = HV, .k = K, .v = K};
  kda::Params params;
  kda::Inputs in{qf.data(), kf.data(), vf.data(), gf.data(), bf.data(), af.data(), dtf.data()};
  std::vector<double> o;
  kda::reference_forward(shape, params, in, state_[size_t(l)], o);
  std::vector<double> gate = mat(p + "kda_out_gate.weight", h, vd, 0);
  const std::vector<double>& w_norm = tensor(p + "kda_out_norm.weight");
  for (int hd = 0; hd < HV; ++hd) {
    double ss = 0;
    for (int i = 0; i < K; ++i) ss += o[size_t(hd * K + i)] * o[size_t(hd * K + i)];
    double inv = 1 / std::sqrt(ss / K + c_.rms_eps);
    for (int i = 0; i < K; ++i) o[size_t(hd * K + i)] *= inv * w_norm[size_t(i)] * sigmoid(gate[size_t(hd * K + i)]);
  }
  return mat(p + "attn_output.weight", o, c_.dim, 0);
}

// Each head_dim-wide head of x through RMSNorm with weight `name` (qk_norm).
void HybridReference::norm_heads(std::vector<double>& x, const std::string& name) {
  const int hd = c_.head_dim;
  for (size_t head = 0; head < x.size() / size_t(hd); ++head) {
    std::vector<double> one(x.begin() + int64_t(head) * hd, x.begin() + int64_t(head + 1) * hd);
    one = norm(one, name);
    std::copy(one.begin(), one.end(), x.begin() + int64_t(head) * hd);
  }
}

// RoPE as ggml_rope_ext computes it without YaRN: pair i at position pos turns by
// pos * freq_scale * theta^(-2i/d) / rope_freqs[i]; the pair is (2i, 2i+1) (GGUF llama) or
// (i, i + d/2) (NeoX). gemma3's sliding layers: theta rope_local_theta, freq_scale 1.
void HybridReference::rope(std::vector<double>& x, int l) {
  const int hd = c_.head_dim;
  const bool local = c_.has_local_rope() && c_.is_sliding_layer(l);
  const double theta = local ? double(c_.rope_local_theta) : double(c_.rope_theta);
  const double freq_scale = local ? 1.0 : double(c_.rope_freq_scale);
  const bool llama3 = c_.arch == Arch::kLlama && file_.tensor("rope_freqs.weight") != nullptr;
  const std::vector<double>* factors = llama3 ? &tensor("rope_freqs.weight") : nullptr;
  for (size_t head = 0; head < x.size() / size_t(hd); ++head)
    for (int i = 0; i < hd / 2; ++i) {
      double a = pos_ * freq_scale * std::pow(theta, -2.0 * i / hd);
      if (factors != nullptr) a /= (*factors)[size_t(i)];
      const size_t lo = head * size_t(hd) + size_t(c_.rope_neox ? i : 2 * i);
      const size_t hi = head * size_t(hd) + size_t(c_.rope_neox ? i + hd / 2 : 2 * i + 1);
      const double x0 = x[lo], x1 = x[hi];
      x[lo] = x0 * std::cos(a) - x1 * std::sin(a);
      x[hi] = x0 * std::sin(a) + x1 * std::cos(a);
    }
}

std::vector<double> HybridReference::attention(int l, const std::string& p, const std::vector<double>& h) {
  const int hd = c_.head_dim, qd = c_.n_heads * hd, kvd = c_.n_kv_heads * hd;
  std::vector<double> q, k, v;
  if (c_.fused_qkv) {
    const int64_t d = c_.dim;
    q = mat(p + "attn_qkv.weight", h, qd, 0);
    k = mat(p + "attn_qkv.weight", h, kvd, qd * d);
    v = mat(p + "attn_qkv.weight", h, kvd, (qd + kvd) * d);
  } else {
    q = mat(p + "attn_q.weight", h, qd, 0);
    k = mat(p + "attn_k.weight", h, kvd, 0);
    v = mat(p + "attn_v.weight", h, kvd, 0);
  }
  if (c_.attn_bias) {
    auto add = [&](std::vector<double>& x, const std::string& name) {
      const std::vector<double>& b = tensor(name);
      for (size_t i = 0; i < x.size(); ++i) x[i] += b[i];
    };
    add(q, p + "attn_q.bias");
    add(k, p + "attn_k.bias");
    add(v, p + "attn_v.bias");
  }
  if (c_.qk_norm) {
    norm_heads(q, p + "attn_q_norm.weight");
    norm_heads(k, p + "attn_k_norm.weight");
  }
  rope(q, l);
  rope(k, l);
  keys_[size_t(l)].push_back(k);
  values_[size_t(l)].push_back(v);
  // A sliding layer sees the keys at (pos - window, pos]: the last `window` of them.
  const size_t n = keys_[size_t(l)].size();
  const size_t first = c_.is_sliding_layer(l) && n > size_t(c_.sliding_window) ? n - size_t(c_.sliding_window) : 0;
  std::vector<double> out(size_t(c_.n_heads * hd), 0.0);
  for (int head = 0; head < c_.n_heads; ++head) {
    int kvh = head / (c_.n_heads / c_.n_kv_heads);
    std::vector<double> s;
    double mx = -1e300, sum = 0;
    for (size_t t = first; t < n; ++t) {
      const std::vector<double>& key = keys_[size_t(l)][t];
      double dot = 0;
      for (int i = 0; i < hd; ++i) dot += q[size_t(head * hd + i)] * key[size_t(kvh * hd + i)];
      double score = c_.attn_scale > 0 ? dot * double(c_.attn_scale) : dot / std::sqrt(double(hd));
      if (c_.attn_softcap > 0) score = c_.attn_softcap * std::tanh(score / c_.attn_softcap);
      s.push_back(score);
      mx = std::max(mx, s.back());
    }
    for (double& e : s) sum += (e = std::exp(e - mx));
    for (size_t t = 0; t < s.size(); ++t)
      for (int i = 0; i < hd; ++i)
        out[size_t(head * hd + i)] += s[t] / sum * values_[size_t(l)][first + t][size_t(kvh * hd + i)];
  }
  return mat(p + "attn_output.weight", out, c_.dim, 0);
}

// The gated FFN's activation: SiLU, or GELU's tanh approximation (ffn_gelu).
double HybridReference::activation(double g) const {
  if (!c_.ffn_gelu) return g * sigmoid(g);
  return 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
}

std::vector<double> HybridReference::swiglu(const std::string& gate, const std::string& up, const std::string& down,
                                            const std::vector<double>& h, int64_t off_in, int64_t off_out, int width) {
  std::vector<double> g = mat(gate, h, width, off_in), u = mat(up, h, width, off_in);
  for (size_t i = 0; i < g.size(); ++i) g[i] = activation(g[i]) * u[i];
  return mat(down, g, c_.dim, off_out);
}

std::vector<double> HybridReference::mlp(const std::string& p, const std::vector<double>& h) {
  const int ffn = c_.ffn_dim;
  if (c_.n_experts == 0 && c_.fused_gate_up) {  // phi3: ffn_up is the gate's rows, then the up rows
    std::vector<double> g = mat(p + "ffn_up.weight", h, ffn, 0), u = mat(p + "ffn_up.weight", h, ffn, int64_t(ffn) * c_.dim);
    for (size_t i = 0; i < g.size(); ++i) g[i] = activation(g[i]) * u[i];
    return mat(p + "ffn_down.weight", g, c_.dim, 0);
  }
  if (c_.n_experts == 0) return swiglu(p + "ffn_gate.weight", p + "ffn_up.weight", p + "ffn_down.weight", h, 0, 0, ffn);
  const std::vector<double> logits = mat(p + "ffn_gate_inp.weight", h, c_.n_experts, 0);
  std::vector<double> out(size_t(c_.dim), 0.0);
  const int64_t block = int64_t(ffn) * c_.dim;
  for (const auto& [e, weight] : route_experts(c_, logits, nullptr)) {
    std::vector<double> y = swiglu(p + "ffn_gate_exps.weight", p + "ffn_up_exps.weight", p + "ffn_down_exps.weight", h,
                                   e * block, e * block, ffn);
    for (int j = 0; j < c_.dim; ++j) out[size_t(j)] += weight * y[size_t(j)];
  }
  if (c_.shared_expert) {
    std::vector<double> shared = swiglu(p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight",
                                        p + "ffn_down_shexp.weight", h, 0, 0, c_.shared_width());
    const double gate = c_.shared_expert_gate ? sigmoid(mat(p + "ffn_gate_inp_shexp.weight", h, 1, 0)[0]) : 1.0;
    for (int j = 0; j < c_.dim; ++j) out[size_t(j)] += gate * shared[size_t(j)];
  }
  return out;
}

}  // namespace recur
