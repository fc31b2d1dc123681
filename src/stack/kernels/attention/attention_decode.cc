// decode() (attention.h): items per (sequence, kv head, split), attend() per item, a fixed-order
// merge of the splits. Also the helpers of attention_internal.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/convert.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_internal.h"

namespace recur::kernels::attention {
namespace internal {

Result<AttendFn> attend_for(const AttentionOptions& options) {
  const Isa isa = options.isa.value_or(active_isa());
  if (isa > active_isa())
    return unsupported("attention: isa {} is above the active level {}", isa_name(isa), isa_name(active_isa()));
  return kAttend.for_isa(isa);
}

float* scratch(int64_t floats, int slot) {
  thread_local std::vector<float> buf[2];
  std::vector<float>& b = buf[slot];
  if (b.size() < size_t(floats)) b.resize(size_t(floats));
  return b.data();
}


}  // namespace internal

float round_to(KvDType t, float x) {
  switch (t) {
    case KvDType::kF16: return fp16_to_fp32(fp32_to_fp16(x));
    case KvDType::kBF16: return bf16_to_fp32(fp32_to_bf16(x));
    default: return x;
  }
}

int resolve_split_k(const AttentionOptions& options, int64_t items, int64_t max_pages, int threads) {
  if (options.split_k > 0) return options.split_k;
  // Enough items for two per thread, but no split shorter than 4 pages.
  const int64_t want = (2 * int64_t(threads) + items - 1) / std::max<int64_t>(items, 1);
  return int(std::clamp<int64_t>(want, 1, std::max<int64_t>(1, max_pages / 4)));
}

Status decode(const PagedKvCache& cache, int layer, std::span<const int> seqs, const float* q, int q_heads, float* out,
              const AttentionOptions& options, ThreadPool* pool) {
  const KvCacheConfig& c = cache.config();
  if (layer < 0 || layer >= cache.layers()) return invalid_argument("attention decode: layer {} is outside [0, {})", layer, cache.layers());
  if (q_heads < 1 || q_heads % c.kv_heads != 0)
    return invalid_argument("attention decode: q_heads {} is not a positive multiple of kv_heads {}", q_heads, c.kv_heads);
  if (options.split_k < 0) return invalid_argument("attention decode: split_k {} is negative", options.split_k);
  if (options.window < 0) return invalid_argument("attention decode: window {} is negative", options.window);
  RECUR_ASSIGN_OR_RETURN(AttendFn attend, internal::attend_for(options));
  const int B = int(seqs.size()), H = c.kv_heads, D = c.head_dim, G = q_heads / H, P = c.page_size;
  std::vector<std::span<const int32_t>> tables(static_cast<size_t>(B));
  std::vector<int64_t> lens(static_cast<size_t>(B)), first(static_cast<size_t>(B));  // first: the window's start
  int64_t max_pages = 0;
  for (int b = 0; b < B; ++b) {
    RECUR_ASSIGN_OR_RETURN(lens[size_t(b)], cache.length(seqs[size_t(b)], layer));
    if (lens[size_t(b)] == 0) return invalid_argument("attention decode: sequence {} (batch row {}) holds no tokens in layer {}", seqs[size_t(b)], b, layer);
    RECUR_ASSIGN_OR_RETURN(tables[size_t(b)], cache.pages(seqs[size_t(b)]));
    first[size_t(b)] = options.window > 0 ? std::max<int64_t>(0, lens[size_t(b)] - options.window) : 0;
    max_pages = std::max<int64_t>(max_pages, (lens[size_t(b)] + P - 1) / P - first[size_t(b)] / P);
  }
  const LayerView view = cache.layer_view(layer);
  if (internal::uses_ggml(options, view.dtype)) {
    const std::vector<int64_t> ones(seqs.size(), 1);
    return internal::ggml_attention(cache, layer, seqs, ones, q, q_heads, out, options, pool);
  }
  const bool rounded = internal::rounds_operands(options, view.dtype);
  // The rounded path normalizes each row over its whole context: one split.
  const int S = rounded ? 1 : resolve_split_k(options, int64_t(B) * H, max_pages, pool ? pool->size() : 1);
  const float scale = internal::softmax_scale(options, D);
  const int64_t items = int64_t(B) * H * S;
  const size_t row_floats = size_t(G) * size_t(D + 2);
  // Partial results per item: m [G], l [G], acc [G, D].
  std::vector<float> partial(size_t(items) * row_floats);
  auto run = [&](int64_t i0, int64_t i1, int) {
    std::vector<float> qs(size_t(G) * size_t(D));
    float* work = internal::scratch(attend_scratch_floats(P, D, G));
    for (int64_t item = i0; item < i1; ++item) {
      const int b = int(item / (int64_t(H) * S)), h = int(item / S % H), s = int(item % S);
      // The splits share the pages the window covers; the ones wholly before it are not read.
      const int64_t first_page = first[size_t(b)] / P;
      const int64_t pages = (lens[size_t(b)] + P - 1) / P - first_page;
      const Range pr = static_chunk(pages, S, s);
      float* m = partial.data() + size_t(item) * row_floats;
      float* l = m + G;
      float* acc = l + G;
      std::fill(m, m + G, -INFINITY);
      std::fill(l, l + G, 0.0f);
      std::fill(acc, acc + size_t(G) * size_t(D), 0.0f);
      const float* qb = q + (size_t(b) * size_t(q_heads) + size_t(h) * size_t(G)) * size_t(D);
      for (size_t i = 0; i < qs.size(); ++i) qs[i] = (rounded ? round_to(view.dtype, qb[i]) : qb[i]) * scale;
      AttendArgs a{.layer = &view, .pages = tables[size_t(b)].data(), .kv_head = h,
                   .begin = std::max((first_page + pr.begin) * P, first[size_t(b)]),
                   .end = std::min((first_page + pr.end) * P, lens[size_t(b)]), .rows = G, .q = qs.data(), .limit = nullptr,
                   .m = m, .l = l, .acc = acc, .scratch = work, .softcap = options.softcap};
      if (rounded) a.probs = internal::scratch(int64_t(G) * (a.end - a.begin), 1);
      if (a.begin < a.end) attend(a);
    }
  };
  // Items claimed one at a time: each is computed whole by one thread (the bits do not depend on
  // who runs it), and a worker that lost its vCPU is not waited for (parallel_for waited ~1 ms a
  // layer for one on a shared 2-vCPU VM: decode's attention took 2x its 1-thread time).
  if (pool != nullptr) pool->parallel_claim(items, [&](int64_t item, int worker) { run(item, item + 1, worker); });
  else run(0, items, 0);
  // Merge the splits of each (sequence, kv head) in split order, then normalize.
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const float vscale = view.v_head_scale[h];
      const float* base = partial.data() + size_t((int64_t(b) * H + h) * S) * row_floats;
      for (int g = 0; g < G; ++g) {
        float mmax = -INFINITY;
        for (int s = 0; s < S; ++s) mmax = std::max(mmax, base[size_t(s) * row_floats + size_t(g)]);
        float* o = out + (size_t(b) * size_t(q_heads) + size_t(h) * size_t(G) + size_t(g)) * size_t(D);
        std::fill(o, o + D, 0.0f);
        float lsum = 0;
        for (int s = 0; s < S; ++s) {
          const float* ps = base + size_t(s) * row_floats;
          if (ps[G + g] == 0) continue;  // an empty split
          const float w = std::exp(ps[g] - mmax);
          lsum += ps[G + g] * w;
          const float* acc = ps + 2 * G + size_t(g) * size_t(D);
          for (int i = 0; i < D; ++i) o[i] += acc[i] * w;
        }
        const float f = vscale / lsum;
        for (int i = 0; i < D; ++i) o[i] *= f;
      }
    }
  return ok_status();
}

}  // namespace recur::kernels::attention
