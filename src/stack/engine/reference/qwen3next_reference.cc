#include "engine/reference/qwen3next_reference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "engine/reference/reference_session.h"
#include "engine/weights.h"

namespace recur {

namespace {

using Vec = std::vector<double>;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }  // torch's threshold 20

class Qwen3NextReference {
 public:
  Qwen3NextReference(const gguf::File& f, const ModelConfig& c)
      : f_(f), c_(c), state_(size_t(c.n_layers)), conv_(size_t(c.n_layers)), keys_(size_t(c.n_layers)),
        values_(size_t(c.n_layers)) {}

  // Qwen3NextModel.forward for one more token: each decoder layer is
  // h = x + mixer(input_layernorm(x)); x = h + mlp(post_attention_layernorm(h)).
  Vec step(int token) {
    const int d = c_.dim;
    const Vec& embd = tensor("token_embd.weight");
    Vec x(embd.begin() + int64_t(token) * d, embd.begin() + int64_t(token + 1) * d);
    for (int l = 0; l < c_.n_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const Vec h = rms_norm(x, tensor(p + "attn_norm.weight"));
      accumulate(x, c_.is_kda_layer(l) ? gated_deltanet(l, p, h) : attention(l, p, h));
      accumulate(x, sparse_moe(p, rms_norm(x, tensor(p + "post_attention_norm.weight"))));
    }
    ++pos_;
    const Vec y = rms_norm(x, tensor("output_norm.weight"));
    return linear(c_.tied_embeddings ? "token_embd.weight" : "output.weight", y, 0, c_.vocab);
  }

 private:
  // A tensor's values in double, its rows one after another.
  const Vec& tensor(const std::string& name) {
    auto [it, fresh] = tensors_.try_emplace(name);
    if (!fresh) return it->second;
    const gguf::TensorInfo* t = f_.tensor(name);  // the model bound every tensor at load
    const int64_t cols = int64_t(t->dims[0]), rows = int64_t(t->elements()) / cols;
    Weight w{name, t->type, rows, cols, t->data};
    if (const gguf::TensorInfo* s = f_.tensor(name + ".scale"); t->type == gguf::TensorType::kI8 && s != nullptr)
      w.scale = reinterpret_cast<const float*>(s->data);  // W8A8: one scale per row
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      w.dequantize_row(r, row.data());
      it->second.insert(it->second.end(), row.begin(), row.end());
    }
    return it->second;
  }

  static void accumulate(Vec& x, const Vec& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }
  // nn.Linear without bias: rows [row0, row0 + n) of the weight times x.
  Vec linear(const std::string& name, const Vec& x, int64_t row0, int64_t n) {
    const Vec& w = tensor(name);
    const size_t in = x.size();
    Vec y(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r)
      y[size_t(r)] = std::inner_product(x.begin(), x.end(), w.begin() + (row0 + r) * int64_t(in), 0.0);
    return y;
  }
  // Qwen3NextRMSNorm: x / sqrt(mean x^2 + eps) * (1 + w); the GGUF weight holds 1 + w.
  Vec rms_norm(const Vec& x, const Vec& w) const {
    const double ms = std::inner_product(x.begin(), x.end(), x.begin(), 0.0) / double(x.size());
    const double inv = 1 / std::sqrt(ms + c_.rms_eps);
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w[i];
    return y;
  }
  // fla's l2norm: x / sqrt(sum x^2 + 1e-6).
  static void l2norm(double* x, int n) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += x[i] * x[i];
    const double inv = 1 / std::sqrt(ss + 1e-6);
    for (int i = 0; i < n; ++i) x[i] *= inv;
  }

  // Qwen3NextGatedDeltaNet on one token (the recurrent path, cache present).
  Vec gated_deltanet(int l, const std::string& p, const Vec& h) {
    const int HK = c_.kda_key_heads, HV = c_.kda_heads, Dk = c_.kda_head_dim, Dv = c_.kda_head_dim;
    const int G = HV / HK, key_dim = HK * Dk, value_dim = HV * Dv, conv_dim = 2 * key_dim + value_dim;
    const int taps = c_.conv_size;
    // in_proj_qkvz, regrouped by the converter into [q | k | v] (attn_qkv) and z (attn_gate).
    Vec mixed = linear(p + "attn_qkv.weight", h, 0, conv_dim);
    const Vec z = linear(p + "attn_gate.weight", h, 0, value_dim);
    // in_proj_ba as is: per key head, its G b's then its G a's (fix_query_key_value_ordering).
    const Vec ba = linear(p + "ssm_ba.weight", h, 0, 2 * HV);
    // causal_conv1d_update with SiLU: out_c = silu(sum_j w[c, j] x_c(t - taps + 1 + j)).
    Vec& win = conv_[size_t(l)];
    if (win.empty()) win.assign(size_t(conv_dim) * size_t(taps), 0.0);
    const Vec& cw = tensor(p + "ssm_conv1d.weight");  // [conv_dim, taps]
    for (int ch = 0; ch < conv_dim; ++ch) {
      double* w = win.data() + size_t(ch) * size_t(taps);  // the channel's last `taps` inputs, oldest first
      std::rotate(w, w + 1, w + taps);
      w[taps - 1] = mixed[size_t(ch)];
      double y = 0;
      for (int j = 0; j < taps; ++j) y += cw[size_t(ch * taps + j)] * w[j];
      mixed[size_t(ch)] = silu(y);
    }
    const Vec& a_neg = tensor(p + "ssm_a");  // -exp(A_log)
    const Vec& dt_bias = tensor(p + "ssm_dt.bias");
    const Vec& norm_w = tensor(p + "ssm_norm.weight");
    Vec& S = state_[size_t(l)];  // [HV, Dk, Dv]
    if (S.empty()) S.assign(size_t(HV) * size_t(Dk) * size_t(Dv), 0.0);
    Vec core(static_cast<size_t>(value_dim));
    for (int hv = 0; hv < HV; ++hv) {
      const int hk = hv / G;  // repeat_interleave of q and k over the value heads
      Vec q(mixed.begin() + hk * Dk, mixed.begin() + (hk + 1) * Dk);
      Vec k(mixed.begin() + key_dim + hk * Dk, mixed.begin() + key_dim + (hk + 1) * Dk);
      const double* v = mixed.data() + 2 * key_dim + hv * Dv;
      l2norm(q.data(), Dk);
      l2norm(k.data(), Dk);
      for (double& e : q) e /= std::sqrt(double(Dk));
      const double b = ba[size_t(hk * 2 * G + hv % G)], a = ba[size_t(hk * 2 * G + G + hv % G)];
      const double beta = sigmoid(b);
      const double g = a_neg[size_t(hv)] * softplus(a + dt_bias[size_t(hv)]);  // -exp(A_log) softplus(a + dt_bias)
      // torch_recurrent_gated_delta_rule: S *= exp(g); kv_mem = S^T k; delta = (v - kv_mem) beta;
      // S += k delta^T; out = S^T q.
      double* st = S.data() + size_t(hv) * size_t(Dk) * size_t(Dv);
      for (int i = 0; i < Dk * Dv; ++i) st[i] *= std::exp(g);
      Vec delta(static_cast<size_t>(Dv));
      for (int j = 0; j < Dv; ++j) {
        double kv_mem = 0;
        for (int i = 0; i < Dk; ++i) kv_mem += st[i * Dv + j] * k[size_t(i)];
        delta[size_t(j)] = (v[j] - kv_mem) * beta;
      }
      for (int i = 0; i < Dk; ++i)
        for (int j = 0; j < Dv; ++j) st[i * Dv + j] += k[size_t(i)] * delta[size_t(j)];
      for (int j = 0; j < Dv; ++j) {
        double o = 0;
        for (int i = 0; i < Dk; ++i) o += st[i * Dv + j] * q[size_t(i)];
        core[size_t(hv * Dv + j)] = o;
      }
    }
    // Qwen3NextRMSNormGated per head: norm(o) * weight (not zero-centred) * silu(z).
    for (int hv = 0; hv < HV; ++hv) {
      const Vec o(core.begin() + hv * Dv, core.begin() + (hv + 1) * Dv);
      const Vec n = rms_norm(o, norm_w);
      for (int j = 0; j < Dv; ++j) core[size_t(hv * Dv + j)] = n[size_t(j)] * silu(z[size_t(hv * Dv + j)]);
    }
    return linear(p + "ssm_out.weight", core, 0, c_.dim);
  }

  // apply_rotary_pos_emb with a partial rotary factor: the first rd dims rotate by rotate_half
  // (pairs i, i + rd / 2) at inv_freq_i = theta^(-2i / rd); the rest pass.
  void rotate(double* x) const {
    const int rd = c_.rotary_dims(), half = rd / 2;
    for (int i = 0; i < half; ++i) {
      const double angle = double(pos_) * std::pow(double(c_.rope_theta), -2.0 * i / rd) * c_.rope_freq_scale;
      const double x1 = x[i], x2 = x[i + half];
      x[i] = x1 * std::cos(angle) - x2 * std::sin(angle);
      x[i + half] = x2 * std::cos(angle) + x1 * std::sin(angle);
    }
  }

  // Qwen3NextAttention on one token: q and its gate from the doubled q_proj (per head [q ; gate]),
  // q_norm / k_norm per head, partial RoPE, softmax(q k^T / sqrt(hd)) v over the cache with each
  // group of heads on its KV head, times sigmoid(gate), o_proj.
  Vec attention(int l, const std::string& p, const Vec& h) {
    const int H = c_.n_heads, HKV = c_.n_kv_heads, hd = c_.head_dim;
    const Vec qg = linear(p + "attn_q.weight", h, 0, int64_t(H) * 2 * hd);
    Vec k = linear(p + "attn_k.weight", h, 0, int64_t(HKV) * hd);
    const Vec v = linear(p + "attn_v.weight", h, 0, int64_t(HKV) * hd);
    const Vec& qn = tensor(p + "attn_q_norm.weight");
    const Vec& kn = tensor(p + "attn_k_norm.weight");
    for (int j = 0; j < HKV; ++j) {
      Vec kh = rms_norm(Vec(k.begin() + j * hd, k.begin() + (j + 1) * hd), kn);
      rotate(kh.data());
      std::copy(kh.begin(), kh.end(), k.begin() + j * hd);
    }
    keys_[size_t(l)].push_back(k);
    values_[size_t(l)].push_back(v);
    const auto& keys = keys_[size_t(l)];
    const auto& values = values_[size_t(l)];
    const double scale = c_.attn_scale > 0 ? c_.attn_scale : 1 / std::sqrt(double(hd));
    Vec out(size_t(H) * size_t(hd), 0.0);
    for (int hq = 0; hq < H; ++hq) {
      Vec q = rms_norm(Vec(qg.begin() + hq * 2 * hd, qg.begin() + hq * 2 * hd + hd), qn);
      rotate(q.data());
      const int j = hq / (H / HKV);  // repeat_kv
      Vec score(keys.size());
      for (size_t t = 0; t < keys.size(); ++t)
        score[t] = scale * std::inner_product(q.begin(), q.end(), keys[t].begin() + j * hd, 0.0);
      const double top = *std::max_element(score.begin(), score.end());
      double sum = 0;
      for (double& s : score) sum += (s = std::exp(s - top));
      for (size_t t = 0; t < keys.size(); ++t)
        for (int i = 0; i < hd; ++i) out[size_t(hq * hd + i)] += score[t] / sum * values[t][size_t(j * hd + i)];
      for (int i = 0; i < hd; ++i) out[size_t(hq * hd + i)] *= sigmoid(qg[size_t(hq * 2 * hd + hd + i)]);
    }
    return linear(p + "attn_output.weight", out, 0, c_.dim);
  }

  // Qwen3NextMLP: down(silu(gate x) * up x); `row0`s pick an expert of a stacked tensor.
  Vec mlp(const std::string& p, const std::string& kind, const Vec& x, int width, int expert) {
    Vec a = linear(p + "ffn_gate" + kind + ".weight", x, int64_t(expert) * width, width);
    const Vec u = linear(p + "ffn_up" + kind + ".weight", x, int64_t(expert) * width, width);
    for (size_t i = 0; i < a.size(); ++i) a[i] = silu(a[i]) * u[i];
    return linear(p + "ffn_down" + kind + ".weight", a, int64_t(expert) * c_.dim, c_.dim);
  }

  // Qwen3NextSparseMoeBlock: softmax router, top-k (norm_topk_prob: renormalised), plus the
  // shared expert times sigmoid(shared_expert_gate x).
  Vec sparse_moe(const std::string& p, const Vec& x) {
    const int E = c_.n_experts, top_k = c_.n_experts_used;
    Vec prob = linear(p + "ffn_gate_inp.weight", x, 0, E);
    const double top = *std::max_element(prob.begin(), prob.end());
    double sum = 0;
    for (double& e : prob) sum += (e = std::exp(e - top));
    for (double& e : prob) e /= sum;
    std::vector<int> order(static_cast<size_t>(E));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return prob[size_t(a)] > prob[size_t(b)]; });
    double chosen = 0;
    for (int i = 0; i < top_k; ++i) chosen += prob[size_t(order[size_t(i)])];
    Vec out(static_cast<size_t>(c_.dim), 0.0);
    for (int i = 0; i < top_k; ++i) {
      const int e = order[size_t(i)];
      const double w = c_.moe_renormalize ? prob[size_t(e)] / chosen : prob[size_t(e)];
      const Vec y = mlp(p, "_exps", x, c_.ffn_dim, e);
      for (int j = 0; j < c_.dim; ++j) out[size_t(j)] += w * y[size_t(j)];
    }
    const double gate = sigmoid(linear(p + "ffn_gate_inp_shexp.weight", x, 0, 1)[0]);
    const Vec shared = mlp(p, "_shexp", x, c_.shared_width(), 0);
    for (int j = 0; j < c_.dim; ++j) out[size_t(j)] += gate * shared[size_t(j)];
    return out;
  }

  const gguf::File& f_;
  ModelConfig c_;
  int pos_ = 0;
  std::map<std::string, Vec> tensors_;
  std::vector<Vec> state_, conv_;                       // DeltaNet layers: [HV, Dk, Dv], [conv_dim, taps]
  std::vector<std::vector<Vec>> keys_, values_;         // attention layers: per token [HKV hd]
};

}  // namespace

std::unique_ptr<Session> new_qwen3next_reference_session(const gguf::File& file, const ModelConfig& config,
                                                         int max_tokens) {
  return std::make_unique<ReferenceSession<Qwen3NextReference>>(file, config, max_tokens);
}

}  // namespace recur
