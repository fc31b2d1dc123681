// The hybrid forward pass against a float64 implementation written here from the definition
// in hybrid.h (the KDA recurrence through kernels/kda's float64 reference), plus activation
// health on every storage type and MoE routing.
#include "engine/hybrid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/layers.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "kernels/kda/kda_reference.h"

namespace recur {
namespace {

ModelConfig tiny_hybrid(int experts) { return testing::tiny_hybrid_config(experts); }

std::unique_ptr<Model> make(const ModelConfig& c, gguf::TensorType dtype, std::vector<std::byte>& storage) {
  auto w = synthetic_model({c, dtype, 3});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  storage = w->serialize();
  auto f = gguf::parse(storage, "hybrid.gguf");
  EXPECT_TRUE(f.has_value());
  auto m = model_from_file(std::move(*f));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  return std::move(*m);
}

// Float64 hybrid, straight from hybrid.h's definition, over F32 weights.
class Reference {
 public:
  Reference(const gguf::File& f, const ModelConfig& c) : f_(f), c_(c) {
    for (int l = 0; l < c.n_layers; ++l) {
      const int K = c.kda_head_dim;
      state_.emplace_back(size_t(c.kda_heads) * K * K, 0.0);
      window_.emplace_back(size_t(c.conv_size - 1) * size_t(2 * c.kda_key_heads * K + c.kda_heads * K), 0.0);
    }
    keys_.resize(size_t(c.n_layers));
    values_.resize(size_t(c.n_layers));
  }

  std::vector<double> step(int token) {
    const int d = c_.dim;
    std::vector<double> x(static_cast<size_t>(d));
    for (int i = 0; i < d; ++i) x[size_t(i)] = w("token_embd.weight", int64_t(token) * d + i);
    for (int l = 0; l < c_.n_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      std::vector<double> h = norm(x, p + "attn_norm.weight");
      std::vector<double> mix = c_.is_kda_layer(l) ? kda(l, p, h) : attention(l, p, h);
      for (int i = 0; i < d; ++i) x[size_t(i)] += mix[size_t(i)];
      h = norm(x, p + "ffn_norm.weight");
      std::vector<double> ff = mlp(p, h);
      for (int i = 0; i < d; ++i) x[size_t(i)] += ff[size_t(i)];
    }
    ++pos_;
    return mat("token_embd.weight", norm(x, "output_norm.weight"), c_.vocab, 0);  // tied head
  }

 private:
  double w(const std::string& name, int64_t i) const {
    const gguf::TensorInfo* t = f_.tensor(name);
    EXPECT_NE(t, nullptr) << name;
    float v;
    std::memcpy(&v, t->data + 4 * i, 4);
    return v;
  }
  std::vector<double> mat(const std::string& name, const std::vector<double>& x, int rows, int64_t offset) const {
    std::vector<double> y(size_t(rows), 0.0);
    for (int r = 0; r < rows; ++r)
      for (size_t k = 0; k < x.size(); ++k) y[size_t(r)] += w(name, offset + r * int64_t(x.size()) + int64_t(k)) * x[k];
    return y;
  }
  std::vector<double> norm(const std::vector<double>& x, const std::string& name) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    double inv = 1 / std::sqrt(ss / double(x.size()) + c_.rms_eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w(name, int64_t(i));
    return y;
  }
  static double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

  void conv(std::vector<double>& x, const std::string& name, double* win) const {
    const int taps = c_.conv_size;
    for (size_t ch = 0; ch < x.size(); ++ch) {
      double y = w(name, int64_t(ch) * taps + taps - 1) * x[ch];
      for (int j = 0; j < taps - 1; ++j) y += w(name, int64_t(ch) * taps + j) * win[ch * (taps - 1) + size_t(j)];
      for (int j = 0; j + 1 < taps - 1; ++j) win[ch * (taps - 1) + size_t(j)] = win[ch * (taps - 1) + size_t(j) + 1];
      win[ch * (taps - 1) + size_t(taps - 2)] = x[ch];
      x[ch] = y * sigmoid(y);
    }
  }

  std::vector<double> kda(int l, const std::string& p, const std::vector<double>& h) {
    const int K = c_.kda_head_dim, HV = c_.kda_heads, HK = c_.kda_key_heads, qk = HK * K, vd = HV * K;
    std::vector<double> q = mat(p + "kda_q.weight", h, qk, 0), k = mat(p + "kda_k.weight", h, qk, 0),
                        v = mat(p + "kda_v.weight", h, vd, 0);
    double* win = window_[size_t(l)].data();
    const size_t span = size_t(c_.conv_size - 1);
    conv(q, p + "kda_conv_q.weight", win);
    conv(k, p + "kda_conv_k.weight", win + span * size_t(qk));
    conv(v, p + "kda_conv_v.weight", win + 2 * span * size_t(qk));
    std::vector<double> g = mat(p + "kda_f.weight", h, vd, 0), b = mat(p + "kda_b.weight", h, HV, 0);
    // kda_reference takes fp32 inputs.
    std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end()), gf(g.begin(), g.end()),
        bf(b.begin(), b.end()), a_log(static_cast<size_t>(HV)), dt(static_cast<size_t>(vd));
    for (int i = 0; i < HV; ++i) a_log[size_t(i)] = float(w(p + "kda_a_log", i));
    for (int i = 0; i < vd; ++i) dt[size_t(i)] = float(w(p + "kda_dt_bias", i));
    kda::Shape shape{.batch = 1, .tokens = 1, .hk = HK, .hv = HV, .k = K, .v = K};
    kda::Params params;
    kda::Inputs in{qf.data(), kf.data(), vf.data(), gf.data(), bf.data(), a_log.data(), dt.data()};
    std::vector<double> o;
    kda::reference_forward(shape, params, in, state_[size_t(l)], o);
    std::vector<double> gate = mat(p + "kda_out_gate.weight", h, vd, 0);
    for (int hd = 0; hd < HV; ++hd) {
      double ss = 0;
      for (int i = 0; i < K; ++i) ss += o[size_t(hd * K + i)] * o[size_t(hd * K + i)];
      double inv = 1 / std::sqrt(ss / K + c_.rms_eps);
      for (int i = 0; i < K; ++i)
        o[size_t(hd * K + i)] *= inv * w(p + "kda_out_norm.weight", i) * sigmoid(gate[size_t(hd * K + i)]);
    }
    return mat(p + "attn_output.weight", o, c_.dim, 0);
  }

  std::vector<double> attention(int l, const std::string& p, const std::vector<double>& h) {
    const int hd = c_.head_dim, kvd = c_.n_kv_heads * hd;
    std::vector<double> q = mat(p + "attn_q.weight", h, c_.n_heads * hd, 0), k = mat(p + "attn_k.weight", h, kvd, 0),
                        v = mat(p + "attn_v.weight", h, kvd, 0);
    auto rope = [&](std::vector<double>& x) {
      for (size_t head = 0; head < x.size() / size_t(hd); ++head)
        for (int i = 0; i < hd; i += 2) {
          double a = pos_ * std::pow(double(c_.rope_theta), -double(i) / hd), x0 = x[head * hd + size_t(i)],
                 x1 = x[head * hd + size_t(i) + 1];
          x[head * hd + size_t(i)] = x0 * std::cos(a) - x1 * std::sin(a);
          x[head * hd + size_t(i) + 1] = x0 * std::sin(a) + x1 * std::cos(a);
        }
    };
    rope(q);
    rope(k);
    keys_[size_t(l)].push_back(k);
    values_[size_t(l)].push_back(v);
    std::vector<double> out(size_t(c_.n_heads * hd), 0.0);
    for (int head = 0; head < c_.n_heads; ++head) {
      int kvh = head / (c_.n_heads / c_.n_kv_heads);
      std::vector<double> s;
      double mx = -1e300, sum = 0;
      for (const auto& key : keys_[size_t(l)]) {
        double dot = 0;
        for (int i = 0; i < hd; ++i) dot += q[size_t(head * hd + i)] * key[size_t(kvh * hd + i)];
        s.push_back(dot / std::sqrt(double(hd)));
        mx = std::max(mx, s.back());
      }
      for (double& e : s) sum += (e = std::exp(e - mx));
      for (size_t t = 0; t < s.size(); ++t)
        for (int i = 0; i < hd; ++i) out[size_t(head * hd + i)] += s[t] / sum * values_[size_t(l)][t][size_t(kvh * hd + i)];
    }
    return mat(p + "attn_output.weight", out, c_.dim, 0);
  }

  std::vector<double> swiglu(const std::string& gate, const std::string& up, const std::string& down,
                             const std::vector<double>& h, int64_t off_in, int64_t off_out) const {
    std::vector<double> g = mat(gate, h, c_.ffn_dim, off_in), u = mat(up, h, c_.ffn_dim, off_in);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] * sigmoid(g[i]) * u[i];
    return mat(down, g, c_.dim, off_out);
  }

  std::vector<double> mlp(const std::string& p, const std::vector<double>& h) const {
    if (c_.n_experts == 0) return swiglu(p + "ffn_gate.weight", p + "ffn_up.weight", p + "ffn_down.weight", h, 0, 0);
    std::vector<double> logits = mat(p + "ffn_gate_inp.weight", h, c_.n_experts, 0);
    std::vector<int> order(static_cast<size_t>(c_.n_experts));
    for (int i = 0; i < c_.n_experts; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
    double total = 0;
    for (int i = 0; i < c_.n_experts_used; ++i) total += std::exp(logits[size_t(order[size_t(i)])]);
    std::vector<double> out(size_t(c_.dim), 0.0);
    const int64_t block = int64_t(c_.ffn_dim) * c_.dim;
    for (int i = 0; i < c_.n_experts_used; ++i) {
      int e = order[size_t(i)];
      double weight = std::exp(logits[size_t(e)]) / total;
      std::vector<double> y = swiglu(p + "ffn_gate_exps.weight", p + "ffn_up_exps.weight", p + "ffn_down_exps.weight", h,
                                     e * block, e * block);
      for (int j = 0; j < c_.dim; ++j) out[size_t(j)] += weight * y[size_t(j)];
    }
    std::vector<double> shared =
        swiglu(p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight", p + "ffn_down_shexp.weight", h, 0, 0);
    for (int j = 0; j < c_.dim; ++j) out[size_t(j)] += shared[size_t(j)];
    return out;
  }

  const gguf::File& f_;
  ModelConfig c_;
  int pos_ = 0;
  std::vector<std::vector<double>> state_, window_;
  std::vector<std::vector<std::vector<double>>> keys_, values_;
};

void expect_matches_reference(int experts) {
  ModelConfig c = tiny_hybrid(experts);
  c.tied_embeddings = true;
  std::vector<std::byte> storage;
  auto model = make(c, gguf::TensorType::kF32, storage);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (const char* variant : {"vtile", "vtile_recip", "hoisted", "hoisted_recip"}) {
    Config knobs;
    ASSERT_TRUE(knobs.set("engine.kda.decode_variant", variant).has_value());
    auto session = model->new_session(**pool, 16, knobs);
    ASSERT_TRUE(session.has_value());
    Reference ref(static_cast<const HybridModel&>(*model).file(), model->config());
    for (int token : {1, 200, 33, 399, 7, 150, 64, 2}) {
      auto logits = (*session)->step(token);
      ASSERT_TRUE(logits.has_value()) << logits.error().message();
      std::vector<double> want = ref.step(token);
      double err = 0, scale = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        err = std::max(err, std::fabs((*logits)[i] - want[i]));
        scale = std::max(scale, std::fabs(want[i]));
      }
      EXPECT_LT(err, 2e-4 * std::max(1.0, scale)) << variant << " token " << token << " experts " << experts;
    }
  }
}

TEST(Hybrid, DenseMatchesTheFloat64Reference) { expect_matches_reference(0); }
TEST(Hybrid, MoeWithSharedExpertMatchesTheFloat64Reference) { expect_matches_reference(4); }

TEST(Hybrid, ActivationsStayFiniteAndAliveThroughEveryLayer) {
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kF16, gguf::TensorType::kBF16, gguf::TensorType::kQ8_0}) {
    for (int experts : {0, 4}) {
      std::vector<std::byte> storage;
      auto model = make(tiny_hybrid(experts), dtype, storage);
      auto pool = ThreadPool::create({.threads = 1, .pin = false});
      auto session = model->new_session(**pool, 40, Config());
      ASSERT_TRUE(session.has_value());
      std::vector<double> rms(size_t(model->config().n_layers));
      (*session)->set_layer_observer([&](int layer, std::span<const float> x) {
        double ss = 0;
        for (float v : x) ss += std::isfinite(v) ? double(v) * v : 1e300;
        rms[size_t(layer)] = std::sqrt(ss / double(x.size()));
      });
      for (int t = 0; t < 32; ++t) {
        auto logits = (*session)->step(5 + 11 * t);
        ASSERT_TRUE(logits.has_value());
        for (size_t l = 0; l < rms.size(); ++l) {
          EXPECT_GT(rms[l], 0.3) << "layer " << l << " collapsed";
          EXPECT_LT(rms[l], 3.0) << "layer " << l << " exploded or went non-finite";
        }
      }
    }
  }
}

TEST(Hybrid, GeneratesDeterministically) {
  std::vector<std::byte> storage;
  auto model = make(tiny_hybrid(4), gguf::TensorType::kQ8_0, storage);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.stop_at_eos = false;
  auto a = generate(*model, **pool, "hello hybrid", o, [](std::string_view) {});
  auto b = generate(*model, **pool, "hello hybrid", o, [](std::string_view) {});
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->tokens, b->tokens);
  Config bad;
  EXPECT_FALSE(bad.set("engine.kda.decode_variant", "fastest").has_value());
}

TEST(Routing, TopKRenormalizes) {
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f, 0.5f};
  Route r = route_top_k(logits, 2);
  EXPECT_EQ(r.experts, (std::vector<int>{1, 3})) << "ties keep the lower index first";
  EXPECT_NEAR(r.weights[0], 0.5, 1e-6);
  EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0, 1e-6);
  Route r3 = route_top_k(logits, 3);
  EXPECT_EQ(r3.experts[2], 4);
  double e1 = std::exp(2.0), e4 = std::exp(0.5);
  EXPECT_NEAR(r3.weights[2], e4 / (2 * e1 + e4), 1e-6);
}

}  // namespace
}  // namespace recur
