// PagedKvCache (kv_cache.h): page pool, page tables, quantizing writes and dequantizing reads.
#include "kernels/attention/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/convert.h"

namespace recur::kernels::attention {

namespace {
// The largest finite fp16: f16 layers saturate there (values at or above 65520 would round to inf).
constexpr float kF16Max = 65504.0f;
}  // namespace

std::string_view kv_dtype_name(KvDType t) {
  switch (t) {
    case KvDType::kF32: return "f32";
    case KvDType::kBF16: return "bf16";
    case KvDType::kFP8E4M3: return "fp8_e4m3";
    case KvDType::kI8: return "int8";
    case KvDType::kF16: return "f16";
  }
  return "?";
}

Result<KvDType> parse_kv_dtype(std::string_view name) {
  for (int i = 0; i < kNumKvDTypes; ++i)
    if (kv_dtype_name(KvDType(i)) == name) return KvDType(i);
  return invalid_argument("kv cache dtype '{}': expected f32, bf16, f16, fp8_e4m3 or int8", name);
}

size_t kv_dtype_size(KvDType t) {
  switch (t) {
    case KvDType::kF32: return 4;
    case KvDType::kBF16: case KvDType::kF16: return 2;
    case KvDType::kFP8E4M3: case KvDType::kI8: return 1;
  }
  return 0;
}

PagedKvCache::PagedKvCache(KvCacheConfig config) : config_(std::move(config)) {}

Result<PagedKvCache> PagedKvCache::create(const KvCacheConfig& c) {
  if (c.kv_heads < 1 || c.head_dim < 1 || c.page_size < 1 || c.num_pages < 1 || c.layer_dtypes.empty())
    return invalid_argument("kv cache: kv_heads {}, head_dim {}, page_size {}, num_pages {}, layers {}: each must be >= 1",
                            c.kv_heads, c.head_dim, c.page_size, c.num_pages, c.layer_dtypes.size());
  if (c.num_pages > (int64_t(1) << 30)) return invalid_argument("kv cache: num_pages {} exceeds 2^30", c.num_pages);
  PagedKvCache cache(c);
  const size_t slots = size_t(c.num_pages) * size_t(c.kv_heads) * size_t(c.page_size);
  for (KvDType t : c.layer_dtypes) {
    Layer l;
    const size_t bytes = slots * size_t(c.head_dim) * kv_dtype_size(t);
    l.k = AlignedBuffer(bytes, true);
    if (!c.keys_only) l.v = AlignedBuffer(bytes, true);
    if (t == KvDType::kI8) {
      l.k_scale = AlignedBuffer(slots * sizeof(float), true);
      if (!c.keys_only) l.v_scale = AlignedBuffer(slots * sizeof(float), true);
    }
    l.k_head_scale.assign(size_t(c.kv_heads), 1.0f);
    l.v_head_scale.assign(size_t(c.kv_heads), 1.0f);
    cache.layers_.push_back(std::move(l));
  }
  cache.free_list_.resize(size_t(c.num_pages));
  for (int64_t i = 0; i < c.num_pages; ++i) cache.free_list_[size_t(i)] = int32_t(c.num_pages - 1 - i);
  return cache;
}

int64_t PagedKvCache::free_pages() const {
  std::lock_guard lock(*mu_);
  return int64_t(free_list_.size());
}

size_t PagedKvCache::token_bytes(int layer) const {
  const KvDType t = config_.layer_dtypes[size_t(layer)];
  size_t per_head = size_t(config_.head_dim) * kv_dtype_size(t) + (t == KvDType::kI8 ? sizeof(float) : 0);
  return (config_.keys_only ? 1 : 2) * size_t(config_.kv_heads) * per_head;
}

Status PagedKvCache::check_layer(int layer) const {
  if (layer < 0 || layer >= layers()) return invalid_argument("kv cache: layer {} is outside [0, {})", layer, layers());
  return ok_status();
}

Status PagedKvCache::check_seq(int seq) const {
  if (seq < 0 || size_t(seq) >= seqs_.size() || !seqs_[size_t(seq)].live)
    return not_found("kv cache: no live sequence {}", seq);
  return ok_status();
}

Status PagedKvCache::set_fp8_scales(int layer, std::span<const float> ks, std::span<const float> vs) {
  RECUR_RETURN_IF_ERROR(check_layer(layer));
  if (config_.layer_dtypes[size_t(layer)] != KvDType::kFP8E4M3)
    return invalid_argument("kv cache: layer {} is {}, not fp8_e4m3", layer, kv_dtype_name(config_.layer_dtypes[size_t(layer)]));
  if (ks.size() != size_t(config_.kv_heads) || vs.size() != size_t(config_.kv_heads))
    return invalid_argument("kv cache: fp8 scales: {} and {} values for {} kv heads", ks.size(), vs.size(), config_.kv_heads);
  for (size_t h = 0; h < ks.size(); ++h)
    if (!(ks[h] > 0) || !(vs[h] > 0) || !std::isfinite(ks[h]) || !std::isfinite(vs[h]))
      return invalid_argument("kv cache: fp8 scale of kv head {} is k {} v {}; expected positive and finite", h, ks[h], vs[h]);
  std::lock_guard lock(*mu_);
  for (const Sequence& s : seqs_)
    if (s.live && s.lengths[size_t(layer)] > 0)
      return make_error(ErrorCode::kFailedPrecondition, "kv cache: layer {} already holds tokens; fp8 scales are fixed before the first write", layer);
  layers_[size_t(layer)].k_head_scale.assign(ks.begin(), ks.end());
  layers_[size_t(layer)].v_head_scale.assign(vs.begin(), vs.end());
  return ok_status();
}

Status PagedKvCache::calibrate_fp8(int layer, std::span<const float> k, std::span<const float> v, int64_t tokens) {
  const size_t row = size_t(config_.kv_heads) * size_t(config_.head_dim);
  if (tokens < 1 || k.size() != size_t(tokens) * row || v.size() != (config_.keys_only ? 0 : k.size()))
    return invalid_argument("kv cache: calibrate_fp8: {} tokens need {} values of k and {} of v, got {} and {}", tokens,
                            size_t(std::max<int64_t>(tokens, 0)) * row,
                            config_.keys_only ? 0 : size_t(std::max<int64_t>(tokens, 0)) * row, k.size(), v.size());
  std::vector<float> ks(size_t(config_.kv_heads), 0.0f), vs(size_t(config_.kv_heads), 0.0f);
  for (size_t i = 0; i < k.size(); ++i) {
    const size_t h = (i % row) / size_t(config_.head_dim);
    ks[h] = std::max(ks[h], std::fabs(k[i]));
    if (!v.empty()) vs[h] = std::max(vs[h], std::fabs(v[i]));
  }
  for (float* s : {ks.data(), vs.data()})
    for (size_t h = 0; h < ks.size(); ++h) s[h] = (s[h] > 0 && std::isfinite(s[h])) ? s[h] / 448.0f : 1.0f;
  return set_fp8_scales(layer, ks, vs);
}

Result<int> PagedKvCache::add_sequence() {
  std::lock_guard lock(*mu_);
  size_t id = 0;
  while (id < seqs_.size() && seqs_[id].live) ++id;
  if (id == seqs_.size()) seqs_.emplace_back();
  seqs_[id].live = true;
  seqs_[id].pages.clear();
  seqs_[id].lengths.assign(size_t(layers()), 0);
  return int(id);
}

Status PagedKvCache::free_sequence(int seq) {
  std::lock_guard lock(*mu_);
  RECUR_RETURN_IF_ERROR(check_seq(seq));
  Sequence& s = seqs_[size_t(seq)];
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it) free_list_.push_back(*it);
  s = Sequence{};
  return ok_status();
}

Status PagedKvCache::append(int seq, int layer, std::span<const float> k, std::span<const float> v) {
  RECUR_RETURN_IF_ERROR(check_layer(layer));
  const size_t row = size_t(config_.kv_heads) * size_t(config_.head_dim), v_row = config_.keys_only ? 0 : row;
  if (k.size() != row || v.size() != v_row)
    return invalid_argument("kv cache: append: k and v need {} and {} values ([kv_heads {}, head_dim {}]{}), got {} and {}",
                            row, v_row, config_.kv_heads, config_.head_dim, config_.keys_only ? ", keys only" : "",
                            k.size(), v.size());
  for (size_t i = 0; i < row; ++i)
    if (!std::isfinite(k[i]) || (v_row > 0 && !std::isfinite(v[i])))
      return invalid_argument("kv cache: append: sequence {} layer {}: non-finite {} at kv head {}, dim {}", seq, layer,
                              std::isfinite(k[i]) ? "v" : "k", i / size_t(config_.head_dim), i % size_t(config_.head_dim));
  int32_t page = 0;
  int64_t pos = 0;
  {
    std::lock_guard lock(*mu_);
    RECUR_RETURN_IF_ERROR(check_seq(seq));
    Sequence& s = seqs_[size_t(seq)];
    pos = s.lengths[size_t(layer)];
    const size_t index = size_t(pos / config_.page_size);
    if (index == s.pages.size()) {
      if (free_list_.empty())
        return make_error(ErrorCode::kFailedPrecondition, "kv cache: out of pages: all {} pages in use (sequence {}, position {})",
                          config_.num_pages, seq, pos);
      s.pages.push_back(free_list_.back());
      free_list_.pop_back();
    }
    page = s.pages[index];
    ++s.lengths[size_t(layer)];
  }
  write_token(layer, page, int(pos % config_.page_size), k, v);
  return ok_status();
}

void PagedKvCache::write_token(int layer, int32_t page, int slot, std::span<const float> k, std::span<const float> v) {
  Layer& l = layers_[size_t(layer)];
  const KvDType t = config_.layer_dtypes[size_t(layer)];
  const size_t d = size_t(config_.head_dim);
  std::vector<float> scaled(d);
  for (int h = 0; h < config_.kv_heads; ++h) {
    const size_t slot_index = (size_t(page) * size_t(config_.kv_heads) + size_t(h)) * size_t(config_.page_size) + size_t(slot);
    const size_t elem = slot_index * d;
    for (int which = 0; which < (config_.keys_only ? 1 : 2); ++which) {
      std::span<const float> src = (which == 0 ? k : v).subspan(size_t(h) * d, d);
      AlignedBuffer& dst = which == 0 ? l.k : l.v;
      // The inputs were checked (sizes, finite), so the conversions below cannot fail.
      switch (t) {
        case KvDType::kF32: std::memcpy(dst.as<float>().data() + elem, src.data(), d * sizeof(float)); break;
        case KvDType::kBF16: (void)fp32_to_bf16(src, dst.as<uint16_t>().subspan(elem, d)); break;
        case KvDType::kF16: {
          for (size_t i = 0; i < d; ++i) scaled[i] = std::clamp(src[i], -kF16Max, kF16Max);
          (void)fp32_to_fp16(scaled, dst.as<uint16_t>().subspan(elem, d));
          break;
        }
        case KvDType::kFP8E4M3: {
          const float s = (which == 0 ? l.k_head_scale : l.v_head_scale)[size_t(h)];
          for (size_t i = 0; i < d; ++i) scaled[i] = src[i] / s;
          (void)fp32_to_fp8e4m3(scaled, dst.as<uint8_t>().subspan(elem, d));
          break;
        }
        case KvDType::kI8: {
          float* scale = (which == 0 ? l.k_scale : l.v_scale).as<float>().data() + slot_index;
          (void)quantize_int8_rows(src, 1, d, dst.as<int8_t>().subspan(elem, d), std::span<float>(scale, 1));
          break;
        }
      }
    }
  }
}

Result<int64_t> PagedKvCache::length(int seq, int layer) const {
  RECUR_RETURN_IF_ERROR(check_layer(layer));
  std::lock_guard lock(*mu_);
  RECUR_RETURN_IF_ERROR(check_seq(seq));
  return seqs_[size_t(seq)].lengths[size_t(layer)];
}

Result<std::span<const int32_t>> PagedKvCache::pages(int seq) const {
  std::lock_guard lock(*mu_);
  RECUR_RETURN_IF_ERROR(check_seq(seq));
  return std::span<const int32_t>(seqs_[size_t(seq)].pages);
}

LayerView PagedKvCache::layer_view(int layer) const {
  const Layer& l = layers_[size_t(layer)];
  const KvDType t = config_.layer_dtypes[size_t(layer)];
  return LayerView{.dtype = t,
                   .kv_heads = config_.kv_heads,
                   .head_dim = config_.head_dim,
                   .page_size = config_.page_size,
                   .k = l.k.data(),
                   .v = l.v.data(),
                   .k_token_scale = t == KvDType::kI8 ? l.k_scale.as<float>().data() : nullptr,
                   .v_token_scale = t == KvDType::kI8 ? l.v_scale.as<float>().data() : nullptr,
                   .k_head_scale = l.k_head_scale.data(),
                   .v_head_scale = l.v_head_scale.data()};
}

Status PagedKvCache::read(int seq, int layer, int64_t pos, std::span<float> k, std::span<float> v) const {
  RECUR_ASSIGN_OR_RETURN(int64_t len, length(seq, layer));
  if (pos < 0 || pos >= len) return invalid_argument("kv cache: read: position {} is outside [0, {}) of sequence {} layer {}", pos, len, seq, layer);
  const size_t row = size_t(config_.kv_heads) * size_t(config_.head_dim), v_row = config_.keys_only ? 0 : row;
  if (k.size() != row || v.size() != v_row)
    return invalid_argument("kv cache: read: k and v need {} and {} values, got {} and {}", row, v_row, k.size(), v.size());
  RECUR_ASSIGN_OR_RETURN(std::span<const int32_t> table, pages(seq));
  const int32_t page = table[size_t(pos / config_.page_size)];
  const LayerView lv = layer_view(layer);
  const size_t d = size_t(config_.head_dim);
  for (int h = 0; h < config_.kv_heads; ++h) {
    const size_t slot = (size_t(page) * size_t(config_.kv_heads) + size_t(h)) * size_t(config_.page_size) +
                        size_t(pos % config_.page_size);
    for (int which = 0; which < (config_.keys_only ? 1 : 2); ++which) {
      const std::byte* src = which == 0 ? lv.k : lv.v;
      float* dst = (which == 0 ? k : v).data() + size_t(h) * d;
      for (size_t i = 0; i < d; ++i) {
        const size_t e = slot * d + i;
        switch (lv.dtype) {
          case KvDType::kF32: dst[i] = reinterpret_cast<const float*>(src)[e]; break;
          case KvDType::kBF16: dst[i] = bf16_to_fp32(reinterpret_cast<const uint16_t*>(src)[e]); break;
          case KvDType::kF16: dst[i] = fp16_to_fp32(reinterpret_cast<const uint16_t*>(src)[e]); break;
          case KvDType::kFP8E4M3:
            dst[i] = fp8e4m3_to_fp32(reinterpret_cast<const uint8_t*>(src)[e]) * (which == 0 ? lv.k_head_scale : lv.v_head_scale)[h];
            break;
          case KvDType::kI8:
            dst[i] = float(reinterpret_cast<const int8_t*>(src)[e]) * (which == 0 ? lv.k_token_scale : lv.v_token_scale)[slot];
            break;
        }
      }
    }
  }
  return ok_status();
}

}  // namespace recur::kernels::attention
