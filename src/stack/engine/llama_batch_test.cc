// The one batched forward (forward.h) on llama: a batch's logits equal each sequence stepped
// alone through the reference LlamaSession (reference/llama_session.h: flat fp32 KV, one row per
// step); several sequences, a mixed prefill/decode forward, slot and page reuse, TP, layer split,
// KV dtypes and errors that leave every sequence unchanged.
//
// Tolerances (max |a - b| over the logits, relative to max |b|): f32 KV differs from stepping
// only by summation order (m-row GEMM tiles, paged prefill vs decode attention): asserted 1e-4.
// bf16/fp8/int8 KV round the cached K and V: asserted 0.05 / 0.25 / 0.1 of f32's logits.
#include "engine/batch_scenario_test_util.h"
#include "engine/forward.h"
#include "engine/op_capture.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "engine/reference/llama_session.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/thread_pool.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

struct LlamaTiny {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model;
};

LlamaTiny llama_tiny() {
  LlamaTiny t;
  auto w = synthetic_model({testing::tiny_llama_config(), gguf::TensorType::kF32, 5});
  EXPECT_TRUE(w.has_value());
  t.storage = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(t.storage, "llama_batch.gguf")));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  t.model = std::move(*m);
  return t;
}

Config llama_knobs(std::initializer_list<std::pair<std::string, std::string>> kv) {
  Config c;
  for (const auto& [k, v] : kv) EXPECT_TRUE(c.set(k, v).has_value()) << k;
  return c;
}

std::vector<TokenId> llama_prompt(int n, int seed) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(TokenId((seed * 131 + i * 37 + 11) % 400));
  return p;
}

double llama_rel_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0, s = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    d = std::max(d, double(std::fabs(a[i] - b[i])));
    s = std::max(s, double(std::fabs(b[i])));
  }
  return d / std::max(s, 1e-30);
}

TokenId llama_argmax(std::span<const float> v) { return TokenId(std::max_element(v.begin(), v.end()) - v.begin()); }

// Logits after each token of `tokens`, stepped alone through a session.
std::vector<std::vector<float>> stepped(const Model& m, ThreadPool& pool, const std::vector<TokenId>& tokens) {
  auto s = LlamaSession::create(static_cast<const LlamaModel&>(m), pool, 64);
  EXPECT_TRUE(s.has_value());
  std::vector<std::vector<float>> out;
  for (TokenId t : tokens) {
    auto l = (*s)->step(t);
    EXPECT_TRUE(l.has_value());
    out.emplace_back(l->begin(), l->end());
  }
  return out;
}

// Streams A, B, C (prompts 5, 17, 33), then D (9) in B's slot (batch_scenario_test_util.h), 4
// decode steps each side.
using LlamaStream = testing::StreamLog;

std::map<char, LlamaStream> run_streams(const Model& model, ThreadPool& pool, const Config& knobs) {
  auto made = model.new_batch(pool, {.max_sequences = 3, .max_tokens = 64, .max_batch_tokens = 64}, knobs);
  EXPECT_TRUE(made.has_value()) << (made ? "" : made.error().message());
  if (!made) return {};
  return testing::run_batch_scenario(**made, model.config().vocab,
                                     {llama_prompt(5, 1), llama_prompt(17, 2), llama_prompt(33, 3), llama_prompt(9, 4)},
                                     4);
}

TEST(LlamaBatch, StreamsEqualEachSequenceSteppedAlone) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto log = run_streams(*t.model, **pool, Config());
  ASSERT_EQ(log.size(), 4u);
  for (const auto& [name, s] : log) {
    auto ref = stepped(*t.model, **pool, s.tokens);
    for (const auto& [pos, l] : s.logits) {
      EXPECT_LT(llama_rel_diff(l, ref[size_t(pos)]), 1e-4) << name << " position " << pos;
      EXPECT_EQ(llama_argmax(l), llama_argmax(ref[size_t(pos)])) << name << " position " << pos;
    }
  }
}

TEST(LlamaBatch, SessionPrefillEqualsStepping) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const std::vector<TokenId> p = llama_prompt(30, 9);
  auto ref = stepped(*t.model, **pool, p);
  for (const char* tp : {"1", "2"}) {
    auto s = t.model->new_session(**pool, 40, llama_knobs({{"engine.tp", tp}}));
    ASSERT_TRUE(s.has_value()) << s.error().message();
    auto l = (*s)->prefill(p);
    ASSERT_TRUE(l.has_value()) << l.error().message();
    EXPECT_LT(llama_rel_diff(*l, ref.back()), 1e-4) << "tp " << tp;
    EXPECT_EQ((*s)->position(), 30);
    EXPECT_FALSE((*s)->prefill(llama_prompt(11, 1)).has_value()) << "past the session's 40 tokens";
    EXPECT_EQ((*s)->position(), 30);
  }
}

TEST(LlamaBatch, TensorParallelEqualsOneRank) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto one = run_streams(*t.model, **pool, Config());
  for (const char* tp : {"2", "4"}) {
    auto many = run_streams(*t.model, **pool, llama_knobs({{"engine.tp", tp}}));
    ASSERT_EQ(many.size(), one.size()) << "tp " << tp;
    for (const auto& [name, s] : one) {
      EXPECT_EQ(many[name].tokens, s.tokens) << "tp " << tp << " stream " << name;
      for (const auto& [pos, l] : s.logits)
        EXPECT_LT(llama_rel_diff(many[name].logits[pos], l), 1e-4) << "tp " << tp << " " << name << " " << pos;
    }
  }
}

// Llama runs the one forward (forward.h), so layer split reaches it as it reaches the hybrid:
// each attention layer whole on one rank gives TP=1's streams (tokens equal, logits within
// summation order).
TEST(LlamaBatch, LayerSplitEqualsOneRank) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto one = run_streams(*t.model, **pool, Config());
  auto split = run_streams(*t.model, **pool, llama_knobs({{"engine.tp", "2"}, {"engine.layer_split", "on"}}));
  ASSERT_EQ(split.size(), one.size());
  for (const auto& [name, s] : one) {
    EXPECT_EQ(split[name].tokens, s.tokens) << "stream " << name;
    for (const auto& [pos, l] : s.logits)
      EXPECT_LT(llama_rel_diff(split[name].logits[pos], l), 1e-4) << name << " " << pos;
  }
}

// Op taps come from the one forward's table (op_table.h), so llama has them as the hybrid does:
// the attention ops of every layer, the dense FFN's, and TP=2's assembled tensors equal TP=1's.
TEST(LlamaBatch, OpTapsNameEveryOpAndAgreeAcrossRanks) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto capture = [&](const Config& knobs) {
    auto capture = std::make_unique<OpCapture>();
    auto s = t.model->new_session(**pool, 16, knobs);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
    (*s)->set_op_tap(capture.get());
    for (TokenId tok : llama_prompt(3, 9)) {
      capture->begin_step();
      EXPECT_TRUE((*s)->step(tok).has_value());
    }
    return capture;
  };
  auto one = capture(Config());
  auto two = capture(llama_knobs({{"engine.tp", "2"}}));
  const int layers = t.model->config().n_layers;
  EXPECT_EQ(one->ops().size(), size_t(1 + 15 * layers + 2)) << "embed, 15 ops a layer, output_norm, lm_head";
  for (const char* name : {"embed", "layer.0.attn.q_proj", "layer.0.attn.core", "layer.0.attn.all_reduce",
                           "layer.1.ffn.act", "layer.1.ffn.down", "layer.1.residual", "output_norm", "lm_head"})
    ASSERT_NE(one->find(name), nullptr) << name;
  EXPECT_EQ(one->find("layer.1.attn_norm")->inputs, std::vector<std::string>{"layer.0.residual"});
  EXPECT_EQ(one->find("lm_head")->component, "kernel:gemm");
  for (const OpCapture::Op* op : one->ops()) {
    const OpCapture::Op* other = two->find(op->name);
    ASSERT_NE(other, nullptr) << op->name;
    ASSERT_EQ(other->steps.size(), op->steps.size()) << op->name;
    for (size_t step = 0; step < op->steps.size(); ++step) {
      std::vector<float> a(op->steps[step].begin(), op->steps[step].end());
      std::vector<float> b(other->steps[step].begin(), other->steps[step].end());
      ASSERT_EQ(a.size(), b.size()) << op->name;
      EXPECT_LT(llama_rel_diff(b, a), 1e-5) << op->name << " step " << step;
    }
  }
}

// engine.ggml_arithmetic: each RMSNorm is ggml_arith's row (the squares summed in double, then
// (x * scale) * w) and the FFN's activation ggml's SiLU times up, bit for bit, on every path; the
// knob changes the logits' bits.
TEST(LlamaBatch, GgmlArithmeticRunsGgmlsNormAndSilu) {
  LlamaTiny t = llama_tiny();
  auto file = gguf::parse(t.storage, "llama_batch.gguf");
  ASSERT_TRUE(file.has_value());
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto capture = [&](const Config& knobs) {
    auto c = std::make_unique<OpCapture>();
    auto s = t.model->new_session(**pool, 16, knobs);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
    (*s)->set_op_tap(c.get());
    c->begin_step();
    EXPECT_TRUE((*s)->prefill(llama_prompt(5, 3)).has_value());  // one forward of 5 rows
    c->begin_step();
    EXPECT_TRUE((*s)->step(TokenId(17)).has_value());  // then a decode step
    return c;
  };
  const auto floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  for (const char* isa : {"avx512", "avx2"}) {
    const ggml_arith::GgmlIsa g = std::string_view(isa) == "avx512" ? ggml_arith::GgmlIsa::kAvx512 : ggml_arith::GgmlIsa::kAvx2;
    auto ggml = capture(llama_knobs({{"engine.ggml_arithmetic", isa}}));
    const float eps = t.model->config().rms_eps;
    for (int l = 0; l < t.model->config().n_layers; ++l) {
      const std::string layer = "layer." + std::to_string(l);
      const gguf::TensorInfo* w = file->tensor("blk." + std::to_string(l) + ".attn_norm.weight");
      ASSERT_NE(w, nullptr);
      const auto* wf = reinterpret_cast<const float*>(w->data);
      const OpCapture::Op* in = ggml->find(l == 0 ? "embed" : "layer." + std::to_string(l - 1) + ".residual");
      const OpCapture::Op* norm = ggml->find(layer + ".attn_norm");
      const OpCapture::Op* gate = ggml->find(layer + ".ffn.gate");
      const OpCapture::Op* up = ggml->find(layer + ".ffn.up");
      const OpCapture::Op* act = ggml->find(layer + ".ffn.act");
      ASSERT_TRUE(in && norm && gate && up && act) << layer;
      for (int step = 0; step < 2; ++step) {
        const std::vector<float> x = floats(in->steps[size_t(step)]), h = floats(norm->steps[size_t(step)]);
        const int64_t dim = t.model->config().dim, rows = int64_t(x.size()) / dim;
        std::vector<float> want(x.size());
        for (int64_t r = 0; r < rows; ++r) ggml_arith::rms_norm_row(dim, want.data() + r * dim, x.data() + r * dim, eps, wf);
        EXPECT_EQ(h, want) << isa << " " << layer << " step " << step;
        const std::vector<float> a = floats(gate->steps[size_t(step)]), b = floats(up->steps[size_t(step)]);
        const int64_t n = t.model->config().ffn_dim;
        std::vector<float> silu(a.size());
        for (int64_t r = 0; r < int64_t(a.size()) / n; ++r) ggml_arith::silu_row(g, n, silu.data() + r * n, a.data() + r * n);
        for (size_t i = 0; i < silu.size(); ++i) silu[i] *= b[i];
        EXPECT_EQ(floats(act->steps[size_t(step)]), silu) << isa << " " << layer << " step " << step;
      }
    }
    auto own = capture(Config());
    EXPECT_NE(floats(own->find("lm_head")->steps[1]), floats(ggml->find("lm_head")->steps[1])) << isa;
  }
}

TEST(LlamaBatch, KvDtypesStayNearF32) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const std::vector<TokenId> p = llama_prompt(20, 7);
  auto logits_with = [&](const Config& knobs) {
    auto b = t.model->new_batch(**pool, {.max_sequences = 1, .max_tokens = 64, .max_batch_tokens = 32}, knobs);
    EXPECT_TRUE(b.has_value()) << (b ? "" : b.error().message());
    const SeqId seq = *(*b)->add_sequence();
    std::vector<BatchToken> rows;
    for (size_t i = 0; i < p.size(); ++i) rows.push_back({.seq = seq, .token = p[i], .want_logits = i + 1 == p.size()});
    auto l = (*b)->forward(rows);
    EXPECT_TRUE(l.has_value());
    std::vector<float> out(l->begin(), l->end());
    auto d = (*b)->forward(std::vector<BatchToken>{{.seq = seq, .token = llama_argmax(out), .want_logits = true}});
    EXPECT_TRUE(d.has_value());
    out.assign(d->begin(), d->end());
    return out;
  };
  const std::vector<float> f32 = logits_with(Config());
  const std::pair<const char*, double> cases[] = {{"bf16", 0.05}, {"fp8_e4m3", 0.25}, {"int8", 0.1}};
  for (auto [dtype, tol] : cases) {
    Config knobs;
    for (int l = 0; l < t.model->config().n_layers; ++l)
      ASSERT_TRUE(knobs.set(fmt::format("engine.kv_dtype.layer[{}]", l), dtype).has_value());
    EXPECT_LT(llama_rel_diff(logits_with(knobs), f32), tol) << dtype;
  }
}

TEST(LlamaBatch, ErrorsLeaveEverySequenceUnchanged) {
  LlamaTiny t = llama_tiny();
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto made = t.model->new_batch(**pool, {.max_sequences = 2, .max_tokens = 20, .max_batch_tokens = 8}, Config());
  ASSERT_TRUE(made.has_value());
  Batch& b = **made;
  const SeqId s = *b.add_sequence();
  auto rows = [&](int n, SeqId seq) {
    std::vector<BatchToken> r;
    for (int i = 0; i < n; ++i) r.push_back({.seq = seq, .token = TokenId(3 + i), .want_logits = i + 1 == n});
    return r;
  };
  ASSERT_TRUE(b.forward(rows(4, s)).has_value());
  auto good = b.forward(rows(1, s));
  ASSERT_TRUE(good.has_value());
  const std::vector<float> expected(good->begin(), good->end());
  // Each bad forward is refused with the sequence at position 5; then the same good token again
  // from a fresh batch state must give the same logits.
  EXPECT_FALSE(b.forward(rows(1, 1)).has_value()) << "sequence 1 was never added";
  EXPECT_FALSE(b.forward(rows(1, 7)).has_value()) << "sequence 7 is out of range";
  EXPECT_FALSE(b.forward(rows(9, s)).has_value()) << "more than max_batch_tokens";
  auto full = b.forward(rows(8, s));
  ASSERT_TRUE(full.has_value());
  EXPECT_FALSE(b.forward(rows(8, s)).has_value()) << "past max_tokens 20";
  std::vector<BatchToken> bad_token = rows(1, s);
  bad_token[0].token = 400;
  EXPECT_FALSE(b.forward(bad_token).has_value()) << "outside the vocabulary";
  EXPECT_EQ(b.position(s), 13);
  ASSERT_TRUE(b.free_sequence(s).has_value());
  EXPECT_FALSE(b.free_sequence(s).has_value()) << "freed twice";
  EXPECT_FALSE(b.forward(rows(1, s)).has_value()) << "freed sequence";

  // The same 5 tokens on a fresh sequence after the errors give the same logits.
  const SeqId again = *b.add_sequence();
  ASSERT_TRUE(b.forward(rows(4, again)).has_value());
  auto retry = b.forward(rows(1, again));
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(std::vector<float>(retry->begin(), retry->end()), expected);
}

}  // namespace
}  // namespace recur
