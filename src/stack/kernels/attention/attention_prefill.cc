// prefill() (attention.h): append the new tokens (quantizing), then causal attention over the
// cache with one item per (sequence, kv head, block of kQueryBlock query tokens).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_internal.h"

namespace recur::kernels::attention {
namespace {

constexpr int64_t kQueryBlock = 16;

struct Item {
  int seq_index;      // index into seqs
  int kv_head;
  int64_t first;      // first new token of the block, relative to the sequence's new tokens
  int64_t count;      // tokens in the block
};

}  // namespace

Status prefill(PagedKvCache& cache, int layer, std::span<const int> seqs, std::span<const int64_t> tokens, const float* q,
               const float* k, const float* v, int q_heads, float* out, const AttentionOptions& options, ThreadPool* pool) {
  const KvCacheConfig& c = cache.config();
  if (layer < 0 || layer >= cache.layers()) return invalid_argument("attention prefill: layer {} is outside [0, {})", layer, cache.layers());
  if (seqs.size() != tokens.size())
    return invalid_argument("attention prefill: {} sequences but {} token counts", seqs.size(), tokens.size());
  if (q_heads < 1 || q_heads % c.kv_heads != 0)
    return invalid_argument("attention prefill: q_heads {} is not a positive multiple of kv_heads {}", q_heads, c.kv_heads);
  if (options.window < 0) return invalid_argument("attention prefill: window {} is negative", options.window);
  RECUR_ASSIGN_OR_RETURN(AttendFn attend, internal::attend_for(options));
  const int H = c.kv_heads, D = c.head_dim, G = q_heads / H;
  const size_t kv_row = size_t(H) * size_t(D);
  std::vector<int64_t> start(seqs.size()), offset(seqs.size());  // cache position and row of each first new token
  int64_t row = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (tokens[i] < 0) return invalid_argument("attention prefill: sequence {} has {} tokens", seqs[i], tokens[i]);
    RECUR_ASSIGN_OR_RETURN(start[i], cache.length(seqs[i], layer));
    offset[i] = row;
    row += tokens[i];
  }
  for (size_t i = 0; i < seqs.size(); ++i)
    for (int64_t t = 0; t < tokens[i]; ++t) {
      const size_t r = size_t(offset[i] + t);
      RECUR_RETURN_IF_ERROR(cache.append(seqs[i], layer, std::span<const float>(k + r * kv_row, kv_row),
                                         std::span<const float>(v + r * kv_row, kv_row)));
    }
  if (internal::uses_ggml(options, cache.layer_view(layer).dtype))
    return internal::ggml_attention(cache, layer, seqs, tokens, q, q_heads, out, options, pool);
  std::vector<Item> items;
  std::vector<std::span<const int32_t>> tables(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(tables[i], cache.pages(seqs[i]));
    for (int h = 0; h < H; ++h)
      for (int64_t f = 0; f < tokens[i]; f += kQueryBlock)
        items.push_back({int(i), h, f, std::min(kQueryBlock, tokens[i] - f)});
  }
  const LayerView view = cache.layer_view(layer);
  const float scale = internal::softmax_scale(options, D);
  const bool rounded = internal::rounds_operands(options, view.dtype);
  auto run = [&](int64_t i0, int64_t i1, int) {
    const int max_rows = int(kQueryBlock) * G;
    float* work = internal::scratch(attend_scratch_floats(c.page_size, D, max_rows));
    std::vector<float> qs(size_t(max_rows) * size_t(D));
    std::vector<int64_t> limit(static_cast<size_t>(max_rows));
    internal::RowState st;
    for (int64_t it = i0; it < i1; ++it) {
      const Item& item = items[size_t(it)];
      const int rows = int(item.count) * G;
      st.reset(rows, D);
      for (int64_t j = 0; j < item.count; ++j)
        for (int g = 0; g < G; ++g) {
          const size_t r = size_t(j * G + g);
          const size_t src = (size_t(offset[size_t(item.seq_index)] + item.first + j) * size_t(q_heads) + size_t(item.kv_head * G + g)) * size_t(D);
          for (int d = 0; d < D; ++d)
            qs[r * size_t(D) + size_t(d)] = (rounded ? round_to(view.dtype, q[src + size_t(d)]) : q[src + size_t(d)]) * scale;
          limit[r] = start[size_t(item.seq_index)] + item.first + j + 1;
        }
      // With a window the block's first row sees the earliest position: pages before it are not read.
      const int64_t begin = options.window > 0 ? std::max<int64_t>(0, limit[0] - options.window) : 0;
      AttendArgs a{.layer = &view, .pages = tables[size_t(item.seq_index)].data(), .kv_head = item.kv_head,
                   .begin = begin, .end = limit[size_t(rows - 1)], .rows = rows, .q = qs.data(), .limit = limit.data(),
                   .m = st.m.data(), .l = st.l.data(), .acc = st.acc.data(), .scratch = work,
                   .softcap = options.softcap, .window = options.window};
      if (rounded) a.probs = internal::scratch(int64_t(rows) * (a.end - a.begin), 1);
      attend(a);
      const float vscale = view.v_head_scale[item.kv_head];
      for (int64_t j = 0; j < item.count; ++j)
        for (int g = 0; g < G; ++g) {
          const size_t r = size_t(j * G + g);
          float* o = out + (size_t(offset[size_t(item.seq_index)] + item.first + j) * size_t(q_heads) + size_t(item.kv_head * G + g)) * size_t(D);
          const float f = vscale / st.l[r];
          for (int d = 0; d < D; ++d) o[d] = st.acc[r * size_t(D) + size_t(d)] * f;
        }
    }
  };
  // Claimed one item at a time, as decode (attention_decode.cc): the same bits on any pool.
  if (pool != nullptr) pool->parallel_claim(int64_t(items.size()), [&](int64_t it, int worker) { run(it, it + 1, worker); });
  else run(0, int64_t(items.size()), 0);
  return ok_status();
}

}  // namespace recur::kernels::attention
