// The llama forward pass against an independent float64 implementation written here from the
// architecture's definition, on synthetic models in every storage type.
#include "engine/reference/llama_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

ModelConfig tiny_config() { return testing::tiny_llama_config(); }

std::unique_ptr<LlamaModel> make_model(gguf::TensorType dtype, std::vector<std::byte>& storage, uint64_t seed = 5) {
  auto w = synthetic_model({tiny_config(), dtype, seed});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  storage = w->serialize();
  auto file = gguf::parse(storage, "tiny.gguf");
  EXPECT_TRUE(file.has_value());
  auto m = LlamaModel::from_file(std::move(*file));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  return std::move(*m);
}

// Float64 llama, straight from the definition, reading F32 weights directly from the file.
class ReferenceLlama {
 public:
  explicit ReferenceLlama(const gguf::File& f, const ModelConfig& c) : f_(f), c_(c) {}

  std::vector<double> step(int token) {
    const int d = c_.dim, hd = c_.head_dim, kvd = c_.n_kv_heads * hd;
    std::vector<double> x(d);
    for (int i = 0; i < d; ++i) x[i] = w("token_embd.weight", token * d + i);
    keys_.resize(c_.n_layers);
    values_.resize(c_.n_layers);
    for (int l = 0; l < c_.n_layers; ++l) {
      std::string p = "blk." + std::to_string(l) + ".";
      std::vector<double> h = norm(x, p + "attn_norm.weight");
      std::vector<double> q = mat(p + "attn_q.weight", h, c_.n_heads * hd), k = mat(p + "attn_k.weight", h, kvd),
                          v = mat(p + "attn_v.weight", h, kvd);
      rope(q, pos_);
      rope(k, pos_);
      keys_[l].push_back(k);
      values_[l].push_back(v);
      std::vector<double> att(c_.n_heads * hd, 0.0);
      for (int head = 0; head < c_.n_heads; ++head) {
        int kvh = head / (c_.n_heads / c_.n_kv_heads);
        std::vector<double> s(pos_ + 1);
        double mx = -1e300, sum = 0;
        for (int t = 0; t <= pos_; ++t) {
          double dot = 0;
          for (int i = 0; i < hd; ++i) dot += q[head * hd + i] * keys_[l][t][kvh * hd + i];
          s[t] = dot / std::sqrt(double(hd));
          mx = std::max(mx, s[t]);
        }
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (int t = 0; t <= pos_; ++t)
          for (int i = 0; i < hd; ++i) att[head * hd + i] += s[t] / sum * values_[l][t][kvh * hd + i];
      }
      std::vector<double> o = mat(p + "attn_output.weight", att, d);
      for (int i = 0; i < d; ++i) x[i] += o[i];
      h = norm(x, p + "ffn_norm.weight");
      std::vector<double> g = mat(p + "ffn_gate.weight", h, c_.ffn_dim), u = mat(p + "ffn_up.weight", h, c_.ffn_dim);
      for (int i = 0; i < c_.ffn_dim; ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      std::vector<double> down = mat(p + "ffn_down.weight", g, d);
      for (int i = 0; i < d; ++i) x[i] += down[i];
    }
    ++pos_;
    return mat("output.weight", norm(x, "output_norm.weight"), c_.vocab);
  }

 private:
  double w(const std::string& name, int64_t i) const {
    float v;
    std::memcpy(&v, f_.tensor(name)->data + 4 * i, 4);
    return v;
  }
  std::vector<double> mat(const std::string& name, const std::vector<double>& x, int rows) const {
    std::vector<double> y(rows, 0.0);
    for (int r = 0; r < rows; ++r)
      for (size_t c = 0; c < x.size(); ++c) y[r] += w(name, r * int64_t(x.size()) + int64_t(c)) * x[c];
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
  void rope(std::vector<double>& v, int pos) const {
    for (size_t h = 0; h < v.size() / c_.head_dim; ++h)
      for (int i = 0; i < c_.head_dim; i += 2) {
        double a = pos * std::pow(double(c_.rope_theta), -double(i) / c_.head_dim);
        double x0 = v[h * c_.head_dim + i], x1 = v[h * c_.head_dim + i + 1];
        v[h * c_.head_dim + i] = x0 * std::cos(a) - x1 * std::sin(a);
        v[h * c_.head_dim + i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
      }
  }
  const gguf::File& f_;
  ModelConfig c_;
  int pos_ = 0;
  std::vector<std::vector<std::vector<double>>> keys_, values_;
};

TEST(Llama, MatchesTheFloat64ReferenceOnF32Weights) {
  std::vector<std::byte> storage;
  auto model = make_model(gguf::TensorType::kF32, storage);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto session_owned = LlamaSession::create(*model, **pool, 16);
  ASSERT_TRUE(session_owned.has_value());
  LlamaSession& session = **session_owned;
  ReferenceLlama ref(model->file(), model->config());
  for (int token : {1, 300, 17, 42, 399, 5}) {
    auto logits = session.step(token);
    ASSERT_TRUE(logits.has_value());
    std::vector<double> want = ref.step(token);
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_err = std::max(max_err, std::fabs((*logits)[i] - want[i]));
      max_ref = std::max(max_ref, std::fabs(want[i]));
    }
    EXPECT_LT(max_err, 1e-4 * std::max(1.0, max_ref)) << "token " << token;
  }
}

TEST(Llama, ActivationsStayFiniteAndAliveThroughEveryLayer) {
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kF16, gguf::TensorType::kBF16, gguf::TensorType::kQ8_0}) {
    std::vector<std::byte> storage;
    auto model = make_model(dtype, storage);
    auto pool = ThreadPool::create({.threads = 1, .pin = false});
    auto session_owned = LlamaSession::create(*model, **pool, 32);
  ASSERT_TRUE(session_owned.has_value());
  LlamaSession& session = **session_owned;
    std::vector<double> rms(model->config().n_layers, 0.0);
    session.set_layer_observer([&](int layer, std::span<const float> x) {
      double ss = 0;
      for (float v : x) {
        ASSERT_TRUE(std::isfinite(v)) << "layer " << layer;
        ss += double(v) * v;
      }
      rms[layer] = std::sqrt(ss / double(x.size()));
    });
    for (int t = 0; t < 20; ++t) {
      auto logits = session.step(3 + t * 19);
      ASSERT_TRUE(logits.has_value());
      for (int l = 0; l < model->config().n_layers; ++l) {
        EXPECT_GT(rms[l], 0.3) << "layer " << l << " collapsed, dtype " << gguf::tensor_type_name(uint32_t(dtype));
        EXPECT_LT(rms[l], 3.0) << "layer " << l << " exploded";
      }
      double mean = 0, var = 0;
      for (float v : *logits) mean += v;
      mean /= double(logits->size());
      for (float v : *logits) var += (v - mean) * (v - mean);
      EXPECT_GT(std::sqrt(var / double(logits->size())), 0.1) << "logits are flat";
    }
  }
}

TEST(Llama, QuantizedStorageStaysCloseToF32) {
  std::vector<std::byte> s32, s16, sq8;
  auto f32 = make_model(gguf::TensorType::kF32, s32);
  auto f16 = make_model(gguf::TensorType::kF16, s16);
  auto q8 = make_model(gguf::TensorType::kQ8_0, sq8);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto a_owned = LlamaSession::create(*f32, **pool, 8), b_owned = LlamaSession::create(*f16, **pool, 8),
       c_owned = LlamaSession::create(*q8, **pool, 8);
  LlamaSession &a = **a_owned, &b = **b_owned, &c = **c_owned;
  for (int token : {1, 77, 250}) {
    auto la = a.step(token);
    auto lb = b.step(token);
    auto lc = c.step(token);
    double scale = 0, err16 = 0, err8 = 0;
    for (size_t i = 0; i < la->size(); ++i) {
      scale = std::max(scale, double(std::fabs((*la)[i])));
      err16 = std::max(err16, double(std::fabs((*la)[i] - (*lb)[i])));
      err8 = std::max(err8, double(std::fabs((*la)[i] - (*lc)[i])));
    }
    EXPECT_LT(err16, 0.01 * scale);
    EXPECT_LT(err8, 0.05 * scale);
    EXPECT_GT(err8, 0.0) << "Q8_0 should not be bit-identical to F32";
  }
}

TEST(Llama, GenerationIsDeterministicAndRoundTripsText) {
  std::vector<std::byte> storage;
  auto model = make_model(gguf::TensorType::kF32, storage);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto run = [&](float temp, uint64_t seed) {
    GenerateOptions o;
    o.max_new_tokens = 12;
    o.stop_at_eos = false;
    o.sampling = {temp, 0.9f, seed};
    std::string text;
    auto stats = generate(*model, **pool, "the quick brown fox", o, [&](std::string_view p) { text += p; });
    EXPECT_TRUE(stats.has_value());
    EXPECT_EQ(stats->generated_tokens, 12);
    EXPECT_GT(stats->prompt_tokens, 1);
    return stats->tokens;
  };
  EXPECT_EQ(run(0, 1), run(0, 2)) << "greedy ignores the seed";
  EXPECT_EQ(run(0.8f, 7), run(0.8f, 7));
  EXPECT_NE(run(0.8f, 7), run(0.8f, 8));
  const Tokenizer& tok = model->tokenizer();
  for (std::string text : {"the quick brown fox", "Hello, World! 123", "naïve café ünïcode"})
    EXPECT_EQ(tok.decode(tok.encode(text, true)), text);

  GenerateOptions bad;
  bad.sampling.top_p = 0;
  EXPECT_FALSE(generate(*model, **pool, "x", bad, [](std::string_view) {}).has_value());
  bad = {};
  bad.max_new_tokens = 1000;
  EXPECT_NE(generate(*model, **pool, "x", bad, [](std::string_view) {}).error().message().find("context"), std::string::npos);
}

TEST(Llama, MissingOrMisshapenTensorsAreNamed) {
  ModelConfig c = tiny_config();
  auto w = synthetic_model({c, gguf::TensorType::kF32, 1});
  ASSERT_TRUE(w.has_value());
  std::vector<std::byte> bytes = w->serialize();
  // Claim a bigger model than the tensors hold.
  gguf::Writer w2 = *w;
  w2.set("llama.embedding_length", gguf::Value::of_u32(128));
  std::vector<std::byte> b2 = w2.serialize();
  auto f = gguf::parse(b2, "m.gguf");
  ASSERT_TRUE(f.has_value());
  auto m = LlamaModel::from_file(std::move(*f));
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message().find("token_embd.weight"), std::string::npos) << m.error().message();
  EXPECT_NE(m.error().message().find("expected [128, 400]"), std::string::npos) << m.error().message();
}

}  // namespace
}  // namespace recur
