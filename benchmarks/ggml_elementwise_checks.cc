// ggml_arith_checks.h: RMSNorm, RoPE, SiLU, sigmoid and softmax against ggml's ops.
#include <fmt/core.h>

#include <cmath>
#include <cstring>

#include "core/convert.h"
#include "ggml_arith_checks.h"

namespace recur::ggml_graph {

using ggml_arith::GgmlIsa;

void Tally::compare(const std::vector<float>& ggml, const std::vector<float>& mine, const std::string& where) {
  total_ += int64_t(mine.size());
  if (ggml.size() != mine.size()) {
    differ_ += int64_t(mine.size());
    if (first_.empty()) first_ = fmt::format("{}: ggml's graph failed", where);
    return;
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    if (std::memcmp(&ggml[i], &mine[i], sizeof(float)) == 0) continue;
    if (differ_++ == 0) first_ = fmt::format("{}, output {}: ggml {:a}, recur {:a}", where, i, ggml[i], mine[i]);
  }
}

bool Tally::report() const {
  fmt::print("{:<28}{} of {} outputs differ\n", op_ + ":", differ_, total_);
  if (differ_ != 0) fmt::print("  first: {}\n", first_);
  return differ_ == 0;
}

std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<uint16_t> to_fp16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = fp32_to_fp16(x[i]);
  return h;
}

namespace {

// Lengths with and without tails of 16, 8 and 64.
constexpr int64_t kLengths[] = {5, 16, 37, 100, 128, 4099};
constexpr int64_t kRows = 3;
// Input spreads for the exp-based ops: typical values, and values far enough out that the
// vector exp takes its overflow, underflow and subnormal paths.
constexpr float kSpreads[] = {3.0f, 40.0f};

}  // namespace

bool check_rms_norm(const Api& api, std::mt19937_64& rng) {
  Tally tally("rms_norm + mul");
  for (int64_t n : kLengths)
    for (float eps : {1e-6f, 1e-5f}) {
      const auto x = random_floats(rng, size_t(n * kRows), 2.0f), w = random_floats(rng, size_t(n), 1.0f);
      std::vector<float> mine(x.size());
      for (int64_t r = 0; r < kRows; ++r) ggml_arith::rms_norm_row(n, &mine[size_t(r * n)], &x[size_t(r * n)], eps, w.data());
      for (int threads : kThreadCounts) {
        Scratch s(api, kScratchBytes);
        Tensor* out = api.mul(s.ctx(), api.rms_norm(s.ctx(), s.tensor(Type::kF32, {n, kRows}, x.data()), eps),
                              s.tensor(Type::kF32, {n}, w.data()));
        tally.compare(s.compute(out, n * kRows, threads), mine, fmt::format("n {} eps {} threads {}", n, eps, threads));
      }
    }
  return tally.report();
}

namespace {

struct RopeCase {
  int head_dim, n_dims;
  float freq_base;
  int first_pos;  // the tokens sit at first_pos, first_pos + 1, ...
  bool neox = false, freq_factors = false, yarn = false;
};

// recur's RoPE of x [tokens][heads][head_dim]: the first n_dims of each head rotated, the rest
// copied.
std::vector<float> recur_rope(const RopeCase& c, const ggml_arith::RopeParams& rp, const float* factors,
                              const std::vector<int32_t>& pos, int64_t heads, const std::vector<float>& x) {
  std::vector<float> y = x, cs(size_t(c.n_dims));
  for (size_t t = 0; t < pos.size(); ++t) {
    ggml_arith::rope_cache(pos[t], rp, factors, cs.data());
    for (int64_t h = 0; h < heads; ++h) {
      const size_t at = (t * size_t(heads) + size_t(h)) * size_t(c.head_dim);
      ggml_arith::rope_rotate(c.n_dims, c.neox, cs.data(), &x[at], &y[at]);
    }
  }
  return y;
}

void compare_rope(const Api& api, const RopeCase& c, std::mt19937_64& rng, Tally& tally) {
  constexpr int64_t kTokens = 301, kHeads = 2;
  std::vector<int32_t> pos(kTokens);
  for (int64_t t = 0; t < kTokens; ++t) pos[size_t(t)] = int32_t(c.first_pos + t);
  const ggml_arith::RopeParams rp{.n_dims = c.n_dims, .freq_base = c.freq_base, .freq_scale = c.yarn ? 0.25f : 1.0f,
                                  .ext_factor = c.yarn ? 1.0f : 0.0f, .attn_factor = c.yarn ? 1.3f : 1.0f,
                                  .beta_fast = 32.0f, .beta_slow = 1.0f, .n_ctx_orig = 4096};
  std::vector<float> ff(size_t(c.n_dims / 2));
  for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + 0.37f * float(i % 11);
  const auto x = random_floats(rng, size_t(kTokens * kHeads * c.head_dim), 1.5f);
  const auto mine = recur_rope(c, rp, c.freq_factors ? ff.data() : nullptr, pos, kHeads, x);
  for (int threads : kThreadCounts) {
    Scratch s(api, kScratchBytes);
    Tensor* xt = s.tensor(Type::kF32, {c.head_dim, kHeads, kTokens}, x.data());
    Tensor* pt = s.tensor(Type::kI32, {kTokens}, pos.data());
    Tensor* ft = c.freq_factors ? s.tensor(Type::kF32, {int64_t(ff.size())}, ff.data()) : nullptr;
    Tensor* out = api.rope_ext(s.ctx(), xt, pt, ft, c.n_dims, c.neox ? kRopeNeox : kRopeNorm, rp.n_ctx_orig, rp.freq_base,
                               rp.freq_scale, rp.ext_factor, rp.attn_factor, rp.beta_fast, rp.beta_slow);
    tally.compare(s.compute(out, int64_t(x.size()), threads), mine,
                  fmt::format("head_dim {} n_dims {} {} base {} positions from {} factors {} yarn {} threads {}",
                              c.head_dim, c.n_dims, c.neox ? "neox" : "norm", c.freq_base, c.first_pos, c.freq_factors,
                              c.yarn, threads));
  }
}

}  // namespace

bool check_rope(const Api& api, std::mt19937_64& rng) {
  Tally tally("rope_ext");
  // Whole heads rotated, a partial rotation (the rest of the head copied), positions 0..300 and
  // further out.
  for (const RopeCase base : {RopeCase{64, 64, 10000.0f, 0}, RopeCase{128, 128, 1e6f, 0}, RopeCase{80, 32, 10000.0f, 0},
                              RopeCase{128, 128, 1e6f, 3900}})
    for (bool neox : {false, true})
      for (bool factors : {false, true})
        for (bool yarn : {false, true}) {
          RopeCase c = base;
          c.neox = neox;
          c.freq_factors = factors;
          c.yarn = yarn;
          compare_rope(api, c, rng, tally);
        }
  return tally.report();
}

bool check_unary(const Api& api, GgmlIsa isa, std::mt19937_64& rng) {
  Tally silu("silu"), silu_shards("silu_span (2 shards)"), sigmoid("sigmoid");
  for (int64_t n : kLengths)
    for (float spread : kSpreads) {
      const auto x = random_floats(rng, size_t(n * kRows), spread);
      std::vector<float> mine_silu(x.size()), mine_shards(x.size()), mine_sigmoid(x.size());
      const int64_t split = n / 3;  // a tensor-parallel cut, mostly not on a vector boundary
      for (int64_t r = 0; r < kRows; ++r) {
        const size_t at = size_t(r * n);
        ggml_arith::silu_row(isa, n, &mine_silu[at], &x[at]);
        ggml_arith::silu_span(isa, n, 0, split, &mine_shards[at], &x[at]);
        ggml_arith::silu_span(isa, n, split, n - split, &mine_shards[at + size_t(split)], &x[at + size_t(split)]);
        ggml_arith::sigmoid_row(n, &mine_sigmoid[at], &x[at]);
      }
      for (int threads : kThreadCounts) {
        const std::string where = fmt::format("n {} spread {} threads {}", n, spread, threads);
        Scratch s(api, kScratchBytes);
        const auto ggml_silu =
            s.compute(api.silu(s.ctx(), s.tensor(Type::kF32, {n, kRows}, x.data())), n * kRows, threads);
        silu.compare(ggml_silu, mine_silu, where);
        silu_shards.compare(ggml_silu, mine_shards, fmt::format("{} split {}", where, split));
        Scratch t(api, kScratchBytes);
        sigmoid.compare(t.compute(api.sigmoid(t.ctx(), t.tensor(Type::kF32, {n, kRows}, x.data())), n * kRows, threads),
                        mine_sigmoid, where);
      }
    }
  const bool silu_ok = silu.report();
  const bool shards_ok = silu_shards.report();
  return sigmoid.report() && silu_ok && shards_ok;
}

bool check_soft_max(const Api& api, GgmlIsa isa, std::mt19937_64& rng) {
  Tally plain("soft_max"), ext("soft_max_ext (mask, scale)");
  constexpr int64_t kHeads = 2;
  constexpr float kScale = 0.125f;
  std::bernoulli_distribution masked(0.3);
  for (int64_t n : kLengths)
    for (float spread : kSpreads) {
      const int64_t count = n * kRows * kHeads;
      const auto x = random_floats(rng, size_t(count), spread);
      std::vector<float> mask(size_t(n * kRows), 0.0f);
      for (size_t i = 0; i < mask.size(); ++i)
        if (i % size_t(n) != 0 && masked(rng)) mask[i] = -INFINITY;  // each row keeps a finite entry
      std::vector<float> mine_plain(x.size()), mine_ext(x.size());
      for (int64_t r = 0; r < kRows * kHeads; ++r) {
        const size_t at = size_t(r * n);
        ggml_arith::soft_max_row(isa, n, &mine_plain[at], &x[at], 1.0f, nullptr);
        ggml_arith::soft_max_row(isa, n, &mine_ext[at], &x[at], kScale, &mask[size_t((r % kRows) * n)]);
      }
      for (int threads : kThreadCounts) {
        const std::string where = fmt::format("n {} spread {} threads {}", n, spread, threads);
        Scratch s(api, kScratchBytes);
        plain.compare(s.compute(api.soft_max(s.ctx(), s.tensor(Type::kF32, {n, kRows, kHeads}, x.data())), count, threads),
                      mine_plain, where);
        Scratch t(api, kScratchBytes);
        Tensor* out = api.soft_max_ext(t.ctx(), t.tensor(Type::kF32, {n, kRows, kHeads}, x.data()),
                                       t.tensor(Type::kF32, {n, kRows}, mask.data()), kScale, 0.0f);
        ext.compare(t.compute(out, count, threads), mine_ext, where);
      }
  }
  const bool plain_ok = plain.report();
  return ext.report() && plain_ok;
}

}  // namespace recur::ggml_graph
