// W8A8 model files end to end: the writer's int8 rows and per-channel scales against the f32
// weights of the same seed, bind_weight's checks of the scale companion, the W8A8 matmul against
// a float64 reference, and llama / hybrid models run from W8A8 files against their f32 twins.
#include "engine/w8a8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "core/knobs.h"
#include "core/convert.h"
#include "core/thread_pool.h"
#include "engine/model.h"
#include "engine/synthetic.h"
#include "engine/tensor_parallel.h"
#include "engine/test_models.h"

namespace recur {
namespace {


std::vector<std::byte> w8a8_serialized(const ModelConfig& c, gguf::TensorType dtype, uint64_t seed = 5) {
  auto w = synthetic_model({c, dtype, seed});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  return w ? w->serialize() : std::vector<std::byte>{};
}

gguf::File w8a8_parsed(const std::vector<std::byte>& bytes) {
  auto f = gguf::parse(bytes, "w8a8.gguf");
  EXPECT_TRUE(f.has_value()) << (f ? "" : f.error().message());
  return std::move(*f);
}

float w8a8_f32_at(const gguf::TensorInfo& t, size_t i) {
  float v;
  std::memcpy(&v, t.data + 4 * i, 4);
  return v;
}

// Every matrix the f32 file stores as F32 with two or more dims is I8 in the W8A8 file, with
// scale = amax / 127 of its row (bit-exact) and q within half a step of w / scale.
void expect_round_trip(const ModelConfig& c) {
  std::vector<std::byte> b32 = w8a8_serialized(c, gguf::TensorType::kF32), b8 = w8a8_serialized(c, gguf::TensorType::kI8);
  gguf::File f32 = w8a8_parsed(b32), f8 = w8a8_parsed(b8);
  int matrices = 0;
  for (const gguf::TensorInfo& t : f32.tensors) {
    const gguf::TensorInfo* q = f8.tensor(t.name);
    ASSERT_NE(q, nullptr) << t.name;
    const bool conv = t.name.find("conv") != std::string::npos;  // depthwise taps stay F32
    if (t.dims.size() < 2 || conv) {
      EXPECT_EQ(q->type, gguf::TensorType::kF32) << t.name;
      continue;
    }
    ++matrices;
    ASSERT_EQ(q->type, gguf::TensorType::kI8) << t.name;
    ASSERT_EQ(q->dims, t.dims) << t.name;
    const gguf::TensorInfo* s = f8.tensor(t.name + ".scale");
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->type, gguf::TensorType::kF32);
    EXPECT_EQ(s->dims, std::vector<uint64_t>(t.dims.begin() + 1, t.dims.end())) << t.name;
    const size_t cols = t.dims[0], rows = t.elements() / cols;
    const auto* qv = reinterpret_cast<const int8_t*>(q->data);
    for (size_t r = 0; r < rows; ++r) {
      float amax = 0;
      for (size_t i = 0; i < cols; ++i) amax = std::max(amax, std::fabs(w8a8_f32_at(t, r * cols + i)));
      const float scale = w8a8_f32_at(*s, r);
      ASSERT_EQ(scale, amax / 127.0f) << t.name << " row " << r;
      for (size_t i = 0; i < cols; ++i) {
        const double err = std::fabs(double(scale) * qv[r * cols + i] - w8a8_f32_at(t, r * cols + i));
        ASSERT_LE(err, 0.5 * scale * (1 + 1e-6)) << t.name << " row " << r << " col " << i;
      }
    }
  }
  EXPECT_GT(matrices, 10);
}

TEST(W8A8, WriterStoresInt8RowsWithExactPerChannelScales) {
  expect_round_trip(testing::tiny_llama_config());
  expect_round_trip(testing::tiny_hybrid_config(4));  // per expert, per channel
}

TEST(W8A8, BoundWeightsDequantizeToScaleTimesInt8) {
  std::vector<std::byte> b8 = w8a8_serialized(testing::tiny_llama_config(), gguf::TensorType::kI8);
  gguf::File f = w8a8_parsed(b8);
  auto w = bind_weight(f, "blk.1.ffn_down.weight", 64, 96);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  ASSERT_NE(w->scale, nullptr);
  std::vector<float> row(96);
  const auto* q = reinterpret_cast<const int8_t*>(w->data);
  for (int64_t r : {0, 17, 63}) {
    w->dequantize_row(r, row.data());
    for (int64_t i = 0; i < 96; ++i) ASSERT_EQ(row[size_t(i)], w->scale[r] * float(q[r * 96 + i]));
  }
  // A row view keeps each row's scale and compensation.
  Weight v = weight_rows(*w, 17, 20);
  v.dequantize_row(0, row.data());
  EXPECT_EQ(row[5], w->scale[17] * float(q[17 * 96 + 5]));
  EXPECT_EQ(v.comp, w->comp + 17);
  // A column shard (row-parallel TP) gets the compensation of its own columns.
  auto shard = weight_cols(*w, 32, 96);
  ASSERT_TRUE(shard.has_value());
  ASSERT_EQ((*shard)->view.comp_cols, 64);
  for (int64_t r : {0, 40}) {
    int32_t sum = 0;
    for (int64_t c = 32; c < 96; ++c) sum += q[r * 96 + c];
    EXPECT_EQ((*shard)->view.comp[r], 128 * sum) << "row " << r;
  }
}

// y = W x against float64 on the dequantized weights. The kernels quantize each x row to int8
// with s_x = amax / 127, so |x - s_x q_x| <= s_x / 2 per element and the bound is
//   |y[r] - sum_c w[r, c] x[c]| <= s_x / 2 * sum_c |w[r, c]|  (+ fp32 rounding of the result);
// recomputing the kernels' arithmetic (quantize_int8_rows, exact integer sum, s_x s_w) in double
// must agree to one fp32 rounding.
TEST(W8A8, MatmulMatchesFloat64WithinTheActivationQuantizationBound) {
  std::vector<std::byte> b8 = w8a8_serialized(testing::tiny_llama_config(), gguf::TensorType::kI8);
  gguf::File f = w8a8_parsed(b8);
  auto w = bind_weight(f, "blk.0.ffn_gate.weight", 96, 64);
  ASSERT_TRUE(w.has_value()) << w.error().message();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  std::mt19937 rng(4);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = w->rows, k = w->cols;
  std::vector<float> wr(size_t(n * k));
  for (int64_t r = 0; r < n; ++r) w->dequantize_row(r, wr.data() + r * k);
  for (int64_t m : {1, 3, 20}) {
    std::vector<float> x(size_t(m * k)), y(size_t(m * n)), y1(size_t(m * n));
    for (float& v : x) v = dist(rng);
    matmul(*w, x.data(), m, y.data(), pool->get());
    matmul(*w, x.data(), m, y1.data(), nullptr);
    EXPECT_EQ(y, y1) << "the thread count changes nothing";
    std::vector<int8_t> xq(x.size());
    std::vector<float> sx(static_cast<size_t>(m));
    ASSERT_TRUE(quantize_int8_rows(x, size_t(m), size_t(k), xq, sx).has_value());
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < n; ++r) {
        double exact = 0, abs_w = 0;
        int64_t isum = 0;
        for (int64_t c = 0; c < k; ++c) {
          exact += double(wr[size_t(r * k + c)]) * x[size_t(i * k + c)];
          abs_w += std::fabs(wr[size_t(r * k + c)]);
          isum += int64_t(xq[size_t(i * k + c)]) * reinterpret_cast<const int8_t*>(w->data)[r * k + c];
        }
        const double got = y[size_t(i * n + r)];
        const double kernel = double(isum) * sx[size_t(i)] * w->scale[r];
        EXPECT_LE(std::fabs(got - kernel), 6e-8 * std::fabs(kernel) + 1e-30) << "m " << m << " row " << r;
        EXPECT_LE(std::fabs(got - exact), 0.5 * sx[size_t(i)] * abs_w * (1 + 1e-5) + 1e-6) << "m " << m << " row " << r;
      }
    }
  }
}

// Greedy decoding of a W8A8 model against the f32 model of the same seed: activations stay
// healthy in every layer, and the argmax agrees on most steps when both read the same tokens
// (teacher forcing: the f32 model's own greedy continuation).
struct W8A8Agreement {
  int steps = 0, same = 0;
};
W8A8Agreement run_against_f32(const ModelConfig& c) {
  std::vector<std::byte> b32 = w8a8_serialized(c, gguf::TensorType::kF32), b8 = w8a8_serialized(c, gguf::TensorType::kI8);
  auto m32 = model_from_file(w8a8_parsed(b32));
  auto m8 = model_from_file(w8a8_parsed(b8));
  EXPECT_TRUE(m32.has_value() && m8.has_value()) << (m8 ? "" : m8.error().message());
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto s32 = (*m32)->new_session(**pool, 48, Config());
  auto s8 = (*m8)->new_session(**pool, 48, Config());
  EXPECT_TRUE(s32.has_value() && s8.has_value());
  std::vector<double> rms(size_t(c.n_layers));
  (*s8)->set_layer_observer([&](int layer, std::span<const float> x) {
    double ss = 0;
    for (float v : x) ss += std::isfinite(v) ? double(v) * v : 1e300;
    rms[size_t(layer)] = std::sqrt(ss / double(x.size()));
  });
  W8A8Agreement a;
  int token = 1;
  for (int t = 0; t < 40; ++t) {
    auto l32 = (*s32)->step(token);
    auto l8 = (*s8)->step(token);
    EXPECT_TRUE(l32.has_value() && l8.has_value());
    if (!l32 || !l8) return a;
    for (size_t l = 0; l < rms.size(); ++l) {
      EXPECT_GT(rms[l], 0.3) << "layer " << l << " collapsed";
      EXPECT_LT(rms[l], 3.0) << "layer " << l << " exploded or went non-finite";
    }
    double mean = 0, var = 0;
    for (float v : *l8) mean += v;
    mean /= double(l8->size());
    for (float v : *l8) var += (v - mean) * (v - mean);
    EXPECT_GT(std::sqrt(var / double(l8->size())), 0.1) << "logits are flat";
    const int a32 = int(std::max_element(l32->begin(), l32->end()) - l32->begin());
    const int a8 = int(std::max_element(l8->begin(), l8->end()) - l8->begin());
    ++a.steps;
    a.same += a32 == a8;
    token = a32;
  }
  return a;
}

TEST(W8A8, LlamaRunsW8A8FilesCloseToF32) {
  W8A8Agreement a = run_against_f32(testing::tiny_llama_config());
  fmt::print("llama greedy agreement with f32: {}/{}\n", a.same, a.steps);
  EXPECT_GE(a.same, a.steps * 8 / 10) << a.same << "/" << a.steps;
}

TEST(W8A8, HybridRunsW8A8FilesCloseToF32) {
  for (int experts : {0, 4}) {
    W8A8Agreement a = run_against_f32(testing::tiny_hybrid_config(experts));
    fmt::print("hybrid (experts {}) greedy agreement with f32: {}/{}\n", experts, a.same, a.steps);
    EXPECT_GE(a.same, a.steps * 8 / 10) << a.same << "/" << a.steps << " experts " << experts;
  }
}

// Tensor parallelism splits W8A8 weights by rows (scales and compensation follow the rows) and
// by columns (a copied shard: its compensation is recomputed over its columns, and each rank
// quantizes its slice of x on its own, so the logits move by the activation rounding only).
void expect_tp2_matches_tp1(const ModelConfig& c) {
  std::vector<std::byte> b8 = w8a8_serialized(c, gguf::TensorType::kI8);
  auto model = model_from_file(w8a8_parsed(b8));
  ASSERT_TRUE(model.has_value()) << model.error().message();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  Config tp2;
  ASSERT_TRUE(tp2.set("engine.tp", "2").has_value());
  auto one = (*model)->new_session(**pool, 8, Config());
  auto two = (*model)->new_session(**pool, 8, tp2);
  ASSERT_TRUE(one.has_value() && two.has_value()) << (two ? "" : two.error().message());
  for (int token : {1, 77, 250}) {
    auto a = (*one)->step(token);
    ASSERT_TRUE(a.has_value());
    std::vector<float> la(a->begin(), a->end());
    auto b = (*two)->step(token);
    ASSERT_TRUE(b.has_value());
    double err = 0, scale = 0;
    for (size_t i = 0; i < la.size(); ++i) {
      err = std::max(err, double(std::fabs(la[i] - (*b)[i])));
      scale = std::max(scale, double(std::fabs(la[i])));
    }
    EXPECT_LT(err, 0.05 * scale) << "token " << token;
  }
}

TEST(W8A8, TensorParallelShardsMatchOneRank) {
  for (const ModelConfig& c : {testing::tiny_llama_config(), testing::tiny_hybrid_config(4)}) {
    SCOPED_TRACE(arch_name(c.arch));
    expect_tp2_matches_tp1(c);
  }
}

// Bad files: a copy of a W8A8 model with one tensor replaced (or dropped).
std::vector<std::byte> w8a8_edited(const gguf::File& f, const std::string& name, const gguf::TensorType* type,
                                   std::vector<uint64_t> dims) {
  gguf::Writer w;
  for (const auto& [key, value] : f.metadata)
    if (key != "general.alignment") w.set(key, value);
  for (const gguf::TensorInfo& t : f.tensors) {
    if (t.name != name) {
      EXPECT_TRUE(w.add_tensor(t.name, t.type, t.dims, std::span(t.data, t.bytes)).has_value());
    } else if (type != nullptr) {
      std::vector<std::byte> zeros(*gguf::tensor_bytes(*type, dims), std::byte{0});
      EXPECT_TRUE(w.add_tensor(t.name, *type, dims, zeros).has_value());
    }
  }
  return w.serialize();
}

std::string w8a8_load_error(const std::vector<std::byte>& bytes) {
  auto m = model_from_file(w8a8_parsed(bytes));
  EXPECT_FALSE(m.has_value());
  return m ? "" : m.error().message();
}

TEST(W8A8, BadScaleCompanionsAreNamed) {
  const ModelConfig c = testing::tiny_llama_config();
  std::vector<std::byte> good = w8a8_serialized(c, gguf::TensorType::kI8);
  gguf::File f = w8a8_parsed(good);
  const std::string scale = "blk.2.attn_q.weight.scale";
  std::string e = w8a8_load_error(w8a8_edited(f, scale, nullptr, {}));
  EXPECT_NE(e.find("I8 tensor 'blk.2.attn_q.weight' (info at byte"), std::string::npos) << e;
  EXPECT_NE(e.find("has no '" + scale + "'"), std::string::npos) << e;

  const gguf::TensorType f32 = gguf::TensorType::kF32, f16 = gguf::TensorType::kF16;
  e = w8a8_load_error(w8a8_edited(f, scale, &f32, {63}));
  EXPECT_NE(e.find("tensor '" + scale + "' (info at byte"), std::string::npos) << e;
  EXPECT_NE(e.find("has shape [63], expected [64]"), std::string::npos) << e;

  e = w8a8_load_error(w8a8_edited(f, scale, &f16, {64}));
  EXPECT_NE(e.find("has type F16, expected F32"), std::string::npos) << e;

  // Experts: the scale of a stacked tensor has one row of scales per expert.
  std::vector<std::byte> moe = w8a8_serialized(testing::tiny_hybrid_config(4), gguf::TensorType::kI8);
  gguf::File fm = w8a8_parsed(moe);
  e = w8a8_load_error(w8a8_edited(fm, "blk.0.ffn_up_exps.weight.scale", &f32, {64, 3}));
  EXPECT_NE(e.find("has shape [64, 3], expected [64, 4]"), std::string::npos) << e;

  // Zero scales are a valid (all-zero) row; the unedited file loads.
  EXPECT_TRUE(model_from_file(w8a8_parsed(w8a8_edited(f, scale, &f32, {64}))).has_value());
}

}  // namespace
}  // namespace recur
