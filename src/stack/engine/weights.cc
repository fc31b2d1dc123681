#include "engine/weights.h"

#include <cstring>
#include <optional>
#include <vector>

#include <fmt/ranges.h>

#include "core/convert.h"
#include "core/thread_pool.h"
#include "engine/w8a8.h"
#include "kernels/gemm/gemm.h"
#include "trace/trace.h"

namespace recur {
namespace {

float dot_f32(const float* a, const float* b, int64_t n) {
  // Eight partial sums: lets the compiler vectorize without reassociation flags.
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float t = 0;
  for (; i < n; ++i) t += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t;
}

std::optional<gemm::WeightFormat> stored_format(const Weight& w) {
  if (w.regrouped) return w.type == gguf::TensorType::kF16 ? gemm::WeightFormat::kF16R16 : gemm::WeightFormat::kQ8_0R16;
  switch (w.type) {
    case gguf::TensorType::kF32: return gemm::WeightFormat::kF32;
    case gguf::TensorType::kF16: return gemm::WeightFormat::kF16;
    case gguf::TensorType::kBF16: return gemm::WeightFormat::kBf16;
    case gguf::TensorType::kQ8_0: return gemm::WeightFormat::kQ8_0;
    default: return std::nullopt;
  }
}

}  // namespace

size_t Weight::row_bytes() const {
  gguf::BlockLayout b = gguf::block_layout(type);
  return size_t(cols / b.elements) * b.bytes;
}

void Weight::dequantize_row(int64_t r, float* out) const {
  const std::byte* row = data + size_t(r) * row_bytes();
  std::vector<std::byte> ungrouped(regrouped ? row_bytes() : 0);
  if (regrouped) {
    ungroup_row(*this, r, ungrouped.data());
    row = ungrouped.data();
  }
  switch (type) {
    case gguf::TensorType::kF32:
      std::memcpy(out, row, size_t(cols) * 4);
      return;
    case gguf::TensorType::kF16:
    case gguf::TensorType::kBF16: {
      const bool half = type == gguf::TensorType::kF16;
      for (int64_t i = 0; i < cols; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        out[i] = half ? fp16_to_fp32(h) : bf16_to_fp32(h);
      }
      return;
    }
    case gguf::TensorType::kQ8_0:
      for (int64_t b = 0; b < cols / gemm::kQ8Block; ++b) {
        const std::byte* blk = row + b * gemm::kQ8BlockBytes;
        uint16_t d16;
        std::memcpy(&d16, blk, 2);
        float d = fp16_to_fp32(d16);
        const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
        for (int i = 0; i < gemm::kQ8Block; ++i) out[b * gemm::kQ8Block + i] = d * float(q[i]);
      }
      return;
    case gguf::TensorType::kI8: {
      const auto* q = reinterpret_cast<const int8_t*>(row);
      const float s = scale != nullptr ? scale[r] : 1.0f;
      for (int64_t i = 0; i < cols; ++i) out[i] = s * float(q[i]);
      return;
    }
    case gguf::TensorType::kI32: {
      for (int64_t i = 0; i < cols; ++i) {
        int32_t v;
        std::memcpy(&v, row + 4 * i, 4);
        out[i] = float(v);
      }
      return;
    }
  }
}

Result<Weight> bind_weight(const gguf::File& file, const std::string& name, int64_t rows, int64_t cols) {
  const gguf::TensorInfo* t = file.tensor(name);
  if (t == nullptr) return not_found("{}: tensor '{}' is missing", file.source(), name);
  std::vector<uint64_t> want = rows == 1 ? std::vector<uint64_t>{uint64_t(cols)} : std::vector<uint64_t>{uint64_t(cols), uint64_t(rows)};
  std::vector<uint64_t> got = t->dims;
  while (got.size() > want.size() && got.back() == 1) got.pop_back();
  if (got != want)
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [{}]", file.source(), name,
                       t->info_position, fmt::join(t->dims, ", "), fmt::join(want, ", "));
  if (t->type == gguf::TensorType::kI32)
    return unsupported("{}: tensor '{}' has type {}, which the forward pass does not run", file.source(), name,
                       gguf::tensor_type_name(uint32_t(t->type)));
  Weight w{name, t->type, rows, cols, t->data};
  if (t->type == gguf::TensorType::kI8) RECUR_RETURN_IF_ERROR(attach_w8a8(file, *t, w));
  return w;
}

Weight weight_rows(const Weight& w, int64_t r0, int64_t r1) {
  Weight v = w;
  v.rows = r1 - r0;
  if (w.regrouped && (r0 % gemm::kQ8R16Rows != 0 || r1 % gemm::kQ8R16Rows != 0)) {
    // The slice cuts a group: its rows back in row form, in memory the view owns.
    const size_t rb = w.row_bytes();
    auto copy = std::make_shared<std::vector<std::byte>>(rb * size_t(v.rows));
    for (int64_t r = r0; r < r1; ++r) ungroup_row(w, r, copy->data() + size_t(r - r0) * rb);
    v.data = copy->data();
    v.regrouped = false;
    v.amx = nullptr;
    v.storage = std::move(copy);
    return v;
  }
  if (v.rows != w.rows) v.amx = nullptr;  // the tiles hold every row
  v.data = w.data + size_t(r0) * w.row_bytes();
  if (w.scale != nullptr) v.scale = w.scale + r0;
  if (w.comp != nullptr) v.comp = w.comp + r0;
  return v;
}

bool amx_tileable(const Weight& w) {
  return w.type == gguf::TensorType::kQ8_0 && w.cols % gemm::kQ8Block == 0 && w.data != nullptr && !w.regrouped &&
         w.amx == nullptr;
}

Status attach_amx_tiles(Weight& w, gemm::TileBackend backend) {
  if (!amx_tileable(w))
    return invalid_argument("tensor '{}' ({} [{}, {}]{}): only Q8_0 rows with whole 32-blocks repack into AMX tiles",
                            w.name, gguf::tensor_type_name_static(w.type), w.rows, w.cols,
                            w.regrouped ? ", regrouped" : "");
  auto tiles = gemm::AmxQ8Weights::repack(w.data, w.rows, w.cols);
  if (!tiles) return invalid_argument("tensor '{}': {}", w.name, tiles.error().message());
  w.amx = std::make_shared<const gemm::AmxQ8Weights>(std::move(*tiles));
  w.amx_backend = backend;
  return ok_status();
}

bool regroupable(const Weight& w) {
  const bool q8 = w.type == gguf::TensorType::kQ8_0 && w.cols % gemm::kQ8Block == 0;
  return (q8 || w.type == gguf::TensorType::kF16) && !w.regrouped && w.rows % gemm::kQ8R16Rows == 0;
}

void ungroup_row(const Weight& w, int64_t r, std::byte* out) {
  if (w.type == gguf::TensorType::kF16)
    gemm::f16_r16_row(w.data, w.cols, r, out);
  else
    gemm::q8_0_r16_row(w.data, w.cols, r, out);
}

Result<Weight> regroup_weight(const Weight& w, std::byte* into) {
  if (!regroupable(w))
    return invalid_argument("tensor '{}' ({} [{}, {}]{}): only Q8_0 and F16 with rows a multiple of 16 regroup", w.name,
                            gguf::tensor_type_name_static(w.type), w.rows, w.cols, w.regrouped ? ", regrouped" : "");
  if (w.type == gguf::TensorType::kF16) {
    RECUR_RETURN_IF_ERROR(gemm::repack_f16_r16(w.data, w.rows, w.cols, into));
  } else {
    RECUR_RETURN_IF_ERROR(gemm::repack_q8_0_r16(w.data, w.rows, w.cols, into));
  }
  Weight v = w;
  v.data = into;
  v.regrouped = true;
  return v;
}

void matmul(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool, gemm::Activations act) {
  RECUR_ZONE("matvec");
  zone.arg("rows", w.rows);
  zone.arg("cols", w.cols);
  zone.arg("m", m);
  zone.arg("dtype", w.regrouped ? (w.type == gguf::TensorType::kF16 ? "f16r16" : "q8_0r16")
                                 : gguf::tensor_type_name_static(w.type));
  if (w.regrouped && m == 1)
    zone.arg("streams", int64_t(gemm::group_streams(act.streams, w.type == gguf::TensorType::kF16
                                                                     ? gemm::WeightFormat::kF16R16
                                                                     : gemm::WeightFormat::kQ8_0R16)));
  // Prefill on AMX tiles, in the fp32 order of the layout the weights are stored in: the same bits.
  if (w.amx != nullptr && m >= kAmxMinTokens && act.q8 == gemm::Q8Activations::kQ8_0 && w.amx->n() == w.rows &&
      w.amx->k() == w.cols) {
    zone.arg("amx", w.amx_backend == gemm::TileBackend::kHardware ? "hardware" : "emulated");
    if (gemm::gemm_q8_0_amx(*w.amx, x, m, y, pool, w.amx_backend,
                            w.regrouped ? gemm::AmxQ8Order::kR16 : gemm::AmxQ8Order::kRowPrefill))
      return;
  }
  if (w.type == gguf::TensorType::kI8 && w.scale != nullptr && matmul_w8a8(w, x, m, y, pool)) return;
  // F32 / F16 / BF16 / Q8_0: the vectorized kernels of kernels/gemm, weights read in place.
  if (auto format = stored_format(w);
      format && gemm::gemm_stored({.format = *format, .n = w.rows, .k = w.cols, .data = w.data}, x, m, y, pool,
                                  nullptr, act)) {
    return;
  }
  // Anything the kernels refuse (bind_weight admits only the formats above, so this is a safety
  // net; W8A8 lands here for non-finite x): dequantize each row and take plain dot products.
  auto rows = [&](int64_t begin, int64_t end, int) {
    std::vector<float> row(size_t(w.cols));
    for (int64_t r = begin; r < end; ++r) {
      w.dequantize_row(r, row.data());
      for (int64_t i = 0; i < m; ++i) y[i * w.rows + r] = dot_f32(row.data(), x + i * w.cols, w.cols);
    }
  };
  if (pool != nullptr) pool->parallel_for(w.rows, rows);
  else rows(0, w.rows, 0);
}

}  // namespace recur
