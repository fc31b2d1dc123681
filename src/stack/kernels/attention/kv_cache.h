// PagedKvCache: the key/value cache of attention, stored in fixed-size pages with a dtype per layer.
//
// Memory: one pool of `num_pages` pages per layer; page id p means the same slot in every
// layer's pool, so a sequence has one page table for all layers. A page holds `page_size`
// consecutive tokens of one sequence, laid out [kv_head][token][head_dim] so that the tokens of
// one kv head in a page are one contiguous run (what the decode kernel streams).
//
// Per-layer dtypes (a mixed-precision cache mixes them across layers):
//   f32       exact.
//   bf16      round to nearest even (core/convert.h).
//   f16       IEEE half, round to nearest even (llama.cpp's default cache type), saturating at
//             ±65504 as fp8 saturates (IEEE rounding, and ggml, would store ±inf).
//   fp8_e4m3  x / s rounded to E4M3FN (saturating at ±448), with one scale s per (layer, kv head)
//             for K and one for V. Scales are fixed, calibrated values: set_fp8_scales() before
//             the layer's first write (default 1.0, i.e. |x| > 448 saturates); calibrate_fp8()
//             computes amax / 448 from sample data. A fixed scale keeps earlier tokens valid.
//   int8      symmetric, one scale per (token, kv head) for K and one for V, computed when the
//             token is written: s = amax / 127 over the head's head_dim values, q = round(x / s)
//             (core/convert.h quantize_int8_rows; an all-zero row has s = 0).
// Writes reject non-finite K/V (a quantized cache cannot store them faithfully).
//
// Sequences: add_sequence() returns an id; append() writes one token of one layer at that
// layer's next position, allocating a page (for all layers) when the sequence crosses a page
// boundary; free_sequence() returns its pages to the pool. Layers of a sequence may be at
// different lengths transiently (an engine writes layer 0 first); length(seq, layer) is what
// attention over that layer reads.
//
// Thread-safety: sequence and page bookkeeping (add/free/append's allocation) is guarded by a
// mutex; append() to distinct (sequence, layer) pairs may run concurrently; readers (layer_view,
// pages, length, read) must not race with writes to the sequence they read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/status.h"

namespace recur::kernels::attention {

// Values are stable (kernel shape parameters and exported states name a dtype by number).
enum class KvDType : uint8_t { kF32 = 0, kBF16 = 1, kFP8E4M3 = 2, kI8 = 3, kF16 = 4 };
inline constexpr int kNumKvDTypes = 5;

std::string_view kv_dtype_name(KvDType t);  // "f32", "bf16", "fp8_e4m3", "int8", "f16"
Result<KvDType> parse_kv_dtype(std::string_view name);
size_t kv_dtype_size(KvDType t);

struct KvCacheConfig {
  int kv_heads = 8;
  int head_dim = 128;
  int page_size = 16;        // tokens per page
  int64_t num_pages = 1024;  // pages per layer pool
  std::vector<KvDType> layer_dtypes = {KvDType::kF32};  // one per layer
  // One stored vector per (token, kv head) instead of a K and a V: MLA's compressed latent plus
  // its shared RoPE key (kernels/mla), whose values are a prefix of the keys. append() and
  // read() then take an empty v; the layer views have no V storage.
  bool keys_only = false;
};

// A read-only view of one layer's storage, what the attention kernels consume. Element offsets:
//   K/V value (page p, head h, slot t, dim i): ((p * kv_heads + h) * page_size + t) * head_dim + i
//   int8 token scale (p, h, t):                (p * kv_heads + h) * page_size + t
struct LayerView {
  KvDType dtype = KvDType::kF32;
  int kv_heads = 0;
  int head_dim = 0;
  int page_size = 0;
  const std::byte* k = nullptr;
  const std::byte* v = nullptr;
  const float* k_token_scale = nullptr;  // int8 only
  const float* v_token_scale = nullptr;  // int8 only
  const float* k_head_scale = nullptr;   // [kv_heads]; 1 except for fp8
  const float* v_head_scale = nullptr;
};

class PagedKvCache {
 public:
  static Result<PagedKvCache> create(const KvCacheConfig& config);
  PagedKvCache(PagedKvCache&&) noexcept = default;
  PagedKvCache& operator=(PagedKvCache&&) noexcept = default;
  PagedKvCache(const PagedKvCache&) = delete;
  PagedKvCache& operator=(const PagedKvCache&) = delete;

  const KvCacheConfig& config() const { return config_; }
  int layers() const { return int(config_.layer_dtypes.size()); }
  int64_t free_pages() const;
  // Bytes one token of one layer occupies (K and V values, or K alone, plus their int8 scales).
  size_t token_bytes(int layer) const;

  // fp8 layers only; scales must be positive and finite; the layer must not hold tokens yet.
  Status set_fp8_scales(int layer, std::span<const float> k_scale, std::span<const float> v_scale);
  // Sets a fp8 layer's scales to amax / 448 per kv head of `tokens` rows of k and v, each
  // [tokens, kv_heads, head_dim] (amax 0 gives scale 1).
  Status calibrate_fp8(int layer, std::span<const float> k, std::span<const float> v, int64_t tokens);

  Result<int> add_sequence();
  Status free_sequence(int seq);
  // Writes one token's k and v ([kv_heads, head_dim] each, fp32) for `layer` at position
  // length(seq, layer), quantizing to the layer's dtype. kFailedPrecondition when out of pages.
  Status append(int seq, int layer, std::span<const float> k, std::span<const float> v);

  Result<int64_t> length(int seq, int layer) const;
  // The sequence's page table (page ids, in token order); valid until its next append or free.
  Result<std::span<const int32_t>> pages(int seq) const;
  LayerView layer_view(int layer) const;
  // The dequantized fp32 values of token `pos`: k and v get [kv_heads, head_dim] each.
  Status read(int seq, int layer, int64_t pos, std::span<float> k, std::span<float> v) const;

 private:
  struct Layer {
    AlignedBuffer k, v, k_scale, v_scale;
    std::vector<float> k_head_scale, v_head_scale;
  };
  struct Sequence {
    bool live = false;
    std::vector<int32_t> pages;
    std::vector<int64_t> lengths;  // per layer
  };

  explicit PagedKvCache(KvCacheConfig config);
  Status check_seq(int seq) const;
  Status check_layer(int layer) const;
  void write_token(int layer, int32_t page, int slot, std::span<const float> k, std::span<const float> v);

  KvCacheConfig config_;
  std::vector<Layer> layers_;
  std::vector<Sequence> seqs_;
  std::vector<int32_t> free_list_;  // LIFO: the lowest free ids are handed out first
  std::unique_ptr<std::mutex> mu_ = std::make_unique<std::mutex>();
};

}  // namespace recur::kernels::attention
