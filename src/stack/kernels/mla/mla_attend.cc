// MLA attention over the latent cache (mla.h): the absorbed and the expanded form.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/convert.h"
#include "kernels/mla/mla.h"
#include "kernels/mla/mla_ops.h"

namespace recur::kernels::mla {

namespace {

using attention::KvDType;
using attention::LayerView;

// The fp32 latents [len, rank + rope] of one sequence's pages (one kv head per slot).
void load_latents(const LayerView& lv, std::span<const int32_t> pages, int64_t len, float* out) {
  const int64_t d = lv.head_dim, p = lv.page_size;
  for (int64_t t = 0; t < len; ++t) {
    const size_t slot = size_t(pages[size_t(t / p)]) * size_t(p) + size_t(t % p);
    const size_t e = slot * size_t(d);
    float* y = out + t * d;
    switch (lv.dtype) {
      case KvDType::kF32: std::copy_n(reinterpret_cast<const float*>(lv.k) + e, d, y); break;
      case KvDType::kBF16:
        for (int64_t i = 0; i < d; ++i) y[i] = bf16_to_fp32(reinterpret_cast<const uint16_t*>(lv.k)[e + size_t(i)]);
        break;
      case KvDType::kF16:
        for (int64_t i = 0; i < d; ++i) y[i] = fp16_to_fp32(reinterpret_cast<const uint16_t*>(lv.k)[e + size_t(i)]);
        break;
      case KvDType::kFP8E4M3:
        for (int64_t i = 0; i < d; ++i)
          y[i] = fp8e4m3_to_fp32(reinterpret_cast<const uint8_t*>(lv.k)[e + size_t(i)]) * lv.k_head_scale[0];
        break;
      case KvDType::kI8:
        for (int64_t i = 0; i < d; ++i)
          y[i] = float(reinterpret_cast<const int8_t*>(lv.k)[e + size_t(i)]) * lv.k_token_scale[slot];
        break;
    }
  }
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// p[t] = exp(p[t] - max) over [0, n), returning the sum.
float exponentiate(float* p, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t t = 0; t < n; ++t) mx = std::max(mx, p[t]);
  float sum = 0;
  for (int64_t t = 0; t < n; ++t) sum += (p[t] = std::exp(p[t] - mx));
  return sum;
}

struct Item {
  const float* lat;  // [len, rank + rope]
  int64_t len;       // positions in the cache (the run's rows are its last `count`)
  int64_t count;
  const float* q;    // the run's first row
  float* out;
  int head;
};

// Absorbed: scores and the weighted sum in latent space, W_UK and W_UV once per row.
void attend_absorbed(const Item& it, const Dims& d, const Weights& w, float scale, std::vector<float>& buf) {
  const int64_t R = d.rank, E = d.rope, N = d.nope, V = d.v_dim, LW = d.latent_width();
  buf.resize(size_t(2 * R + it.len));
  float *q_abs = buf.data(), *lat = q_abs + R, *p = lat + R;
  const float* wk = w.wk + int64_t(it.head) * R * N;
  const float* wv = w.wv + int64_t(it.head) * V * R;
  for (int64_t j = 0; j < it.count; ++j) {
    const float* q = it.q + (j * d.heads + it.head) * d.q_width();
    for (int64_t r = 0; r < R; ++r) q_abs[r] = dot(wk + r * N, q, N);
    const int64_t limit = it.len - it.count + j + 1;
    for (int64_t t = 0; t < limit; ++t) {
      const float* c = it.lat + t * LW;
      p[t] = scale * (dot(q_abs, c, R) + dot(q + N, c + R, E));
    }
    const float inv = 1.0f / exponentiate(p, limit);
    std::fill_n(lat, R, 0.0f);
    for (int64_t t = 0; t < limit; ++t) {
      const float* c = it.lat + t * LW;
      const float pt = p[t] * inv;
      for (int64_t r = 0; r < R; ++r) lat[r] += pt * c[r];
    }
    float* o = it.out + (j * d.heads + it.head) * V;
    for (int64_t v = 0; v < V; ++v) o[v] = dot(wv + v * R, lat, R);
  }
}

// Expanded: each cached token's per-head key and value decompressed, then plain attention.
void attend_expanded(const Item& it, const Dims& d, const Weights& w, float scale, std::vector<float>& buf) {
  const int64_t R = d.rank, E = d.rope, N = d.nope, V = d.v_dim, LW = d.latent_width();
  buf.resize(size_t(it.len * (N + V) + it.len));
  float *keys = buf.data(), *values = keys + it.len * N, *p = values + it.len * V;
  const float* wk = w.wk + int64_t(it.head) * R * N;
  const float* wv = w.wv + int64_t(it.head) * V * R;
  for (int64_t t = 0; t < it.len; ++t) {
    const float* c = it.lat + t * LW;
    float* k = keys + t * N;
    std::fill_n(k, N, 0.0f);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t n = 0; n < N; ++n) k[n] += wk[r * N + n] * c[r];
    for (int64_t v = 0; v < V; ++v) values[t * V + v] = dot(wv + v * R, c, R);
  }
  for (int64_t j = 0; j < it.count; ++j) {
    const float* q = it.q + (j * d.heads + it.head) * d.q_width();
    const int64_t limit = it.len - it.count + j + 1;
    for (int64_t t = 0; t < limit; ++t)
      p[t] = scale * (dot(q, keys + t * N, N) + dot(q + N, it.lat + t * LW + R, E));
    const float inv = 1.0f / exponentiate(p, limit);
    float* o = it.out + (j * d.heads + it.head) * V;
    std::fill_n(o, V, 0.0f);
    for (int64_t t = 0; t < limit; ++t)
      for (int64_t v = 0; v < V; ++v) o[v] += p[t] * inv * values[t * V + v];
  }
}

// Blocked: blocks of about kBlockRows query rows (row block x head group) per sequence, fewer
// heads per block while that leaves pool threads without a block (the blocking does not change
// the results: mla_ops.h).
constexpr int64_t kBlockRows = 64, kRowBlock = 16;

struct Block {
  size_t seq;
  int64_t row;  // the run's first row among all runs
  int64_t j0, j1;
  int h0, h1;
};

void run_blocked(const Dims& d, const Weights& w, float scale, const std::vector<std::vector<float>>& latents,
                 const std::vector<int64_t>& lens, std::span<const int64_t> counts, const float* q, float* out,
                 BlockFn fn, ThreadPool* pool) {
  const int threads = pool == nullptr ? 1 : pool->size();
  int64_t max_count = 1;
  for (int64_t c : counts) max_count = std::max(max_count, c);
  const int64_t nj = std::min(max_count, kRowBlock);
  auto blocks_of = [&](int64_t nh) {
    int64_t n = 0;
    for (int64_t c : counts) n += (c + nj - 1) / nj * ((d.heads + nh - 1) / nh);
    return n;
  };
  int64_t nh = std::clamp<int64_t>(kBlockRows / nj, 1, d.heads);
  while (nh > 1 && blocks_of(nh) < 2 * int64_t(threads)) nh = (nh + 1) / 2;
  std::vector<Block> blocks;
  int64_t row = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    for (int64_t j0 = 0; j0 < counts[i]; j0 += nj)
      for (int64_t h0 = 0; h0 < d.heads; h0 += nh)
        blocks.push_back({i, row, j0, std::min(counts[i], j0 + nj), int(h0), int(std::min<int64_t>(d.heads, h0 + nh))});
    row += counts[i];
  }
  auto run = [&](int64_t b) {
    const Block& k = blocks[size_t(b)];
    thread_local std::vector<float> scratch;
    const int64_t len = lens[k.seq];
    scratch.resize(size_t(block_scratch_floats(d, (k.j1 - k.j0) * (k.h1 - k.h0), len)));
    fn({.dims = &d, .weights = &w, .scale = scale, .lat = latents[k.seq].data(), .len = len, .count = counts[k.seq],
        .q = q + k.row * d.heads * d.q_width(), .out = out + k.row * d.heads * d.v_dim, .j0 = k.j0, .j1 = k.j1,
        .h0 = k.h0, .h1 = k.h1, .scratch = scratch.data()});
  };
  const int64_t n = int64_t(blocks.size());
  if (pool == nullptr || pool->size() == 1 || n < 2) {
    for (int64_t b = 0; b < n; ++b) run(b);
  } else {
    pool->parallel_claim(n, [&](int64_t c, int) { run(c); });
  }
}

}  // namespace

std::string_view variant_name(Variant v) {
  switch (v) {
    case Variant::kAbsorbed: return "absorbed";
    case Variant::kExpand: return "expand";
    case Variant::kBlocked: return "blocked";
  }
  return "absorbed";
}

Result<Variant> parse_variant(std::string_view name) {
  for (Variant v : {Variant::kAbsorbed, Variant::kExpand, Variant::kBlocked})
    if (variant_name(v) == name) return v;
  return invalid_argument("mla variant '{}': expected absorbed, expand or blocked", name);
}

Result<Variant> variant_of_kernel(std::string_view registered) {
  if (registered.starts_with("blocked_") && parse_isa(registered.substr(8))) return Variant::kBlocked;
  if (registered == "absorbed" || registered == "expand") return parse_variant(registered);
  return invalid_argument("mla kernel variant '{}': expected absorbed, expand or blocked_<isa>", registered);
}

Status attend(const attention::PagedKvCache& cache, int layer, std::span<const int> seqs,
              std::span<const int64_t> counts, const float* q, const Dims& d, const Weights& w, float scale,
              Variant variant, Isa isa, float* out, ThreadPool* pool) {
  if (d.heads < 1 || d.nope < 1 || d.rope < 0 || d.rank < 1 || d.v_dim < 1)
    return invalid_argument("mla: heads {}, nope {}, rope {}, rank {}, v_dim {}: each must be positive (rope >= 0)",
                            d.heads, d.nope, d.rope, d.rank, d.v_dim);
  if (seqs.size() != counts.size())
    return invalid_argument("mla: {} sequences but {} row counts", seqs.size(), counts.size());
  if (layer < 0 || layer >= cache.layers())
    return invalid_argument("mla: layer {} is outside the cache's [0, {})", layer, cache.layers());
  const LayerView lv = cache.layer_view(layer);
  if (lv.kv_heads != 1 || lv.head_dim != d.latent_width())
    return invalid_argument("mla: the cache holds {} kv heads of {} values; MLA needs 1 of rank {} + rope {}",
                            lv.kv_heads, lv.head_dim, d.rank, d.rope);
  // Each sequence's latents in fp32, once for all its heads.
  std::vector<std::vector<float>> latents(seqs.size());
  std::vector<Item> items;
  std::vector<int64_t> lens;
  int64_t row = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(int64_t len, cache.length(seqs[i], layer));
    RECUR_ASSIGN_OR_RETURN(std::span<const int32_t> pages, cache.pages(seqs[i]));
    if (counts[i] < 1 || counts[i] > len)
      return invalid_argument("mla: sequence {} has {} rows but holds {} positions in layer {}", seqs[i], counts[i],
                              len, layer);
    latents[i].resize(size_t(len * d.latent_width()));
    load_latents(lv, pages, len, latents[i].data());
    lens.push_back(len);
    for (int h = 0; h < d.heads; ++h)
      items.push_back({latents[i].data(), len, counts[i], q + row * d.heads * d.q_width(),
                       out + row * d.heads * d.v_dim, h});
    row += counts[i];
  }
  if (variant == Variant::kBlocked) {
    run_blocked(d, w, scale, latents, lens, counts, q, out, kAttendBlock.for_isa(isa), pool);
    return ok_status();
  }
  auto run = [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> buf;
    for (int64_t i = i0; i < i1; ++i) {
      if (variant == Variant::kAbsorbed) attend_absorbed(items[size_t(i)], d, w, scale, buf);
      else attend_expanded(items[size_t(i)], d, w, scale, buf);
    }
  };
  const int64_t n = int64_t(items.size());
  if (pool == nullptr || pool->size() == 1 || n < 2) run(0, n);
  else pool->parallel_claim(n, [&](int64_t c, int) { run(c, c + 1); });
  return ok_status();
}

double softmax_scale(int nope, int rope, double factor, double yarn_log_mul) {
  const double m = factor > 1 ? 1 + yarn_log_mul * std::log(factor) : 1.0;
  return m * m / std::sqrt(double(nope + rope));
}

void yarn_rope_tables(int d, double pos, double theta, const Yarn& y, float* c, float* s) {
  const bool scaled = y.factor > 1 && y.original_context > 0;
  double low = 0, high = 0;
  if (scaled) {
    // The rotary dim whose wavelength turns `rotations` times in the original context.
    auto dim_of = [&](double rotations) {
      return d * std::log(y.original_context / (rotations * 2 * M_PI)) / (2 * std::log(theta));
    };
    low = std::max(0.0, std::floor(dim_of(y.beta_fast)));
    high = std::min(double(d - 1), std::ceil(dim_of(y.beta_slow)));
  }
  for (int i = 0; i < d / 2; ++i) {
    const double extrapolated = pos * std::pow(theta, -2.0 * i / d);
    double a = extrapolated;
    if (scaled) {
      // ramp 1 keeps the original frequency (high-frequency pairs), 0 interpolates.
      const double ramp = 1 - std::clamp((i - low) / std::max(0.001, high - low), 0.0, 1.0);
      a = extrapolated / y.factor * (1 - ramp) + extrapolated * ramp;
    }
    const float ci = float(std::cos(a)), si = float(std::sin(a));
    c[2 * i] = ci;
    c[2 * i + 1] = ci;
    s[2 * i] = -si;
    s[2 * i + 1] = si;
  }
}

}  // namespace recur::kernels::mla
