// Embedding gather: rows by id; f16/bf16 through core/convert (dispatched), Q8_0 per block.
#include <cstring>

#include "core/convert.h"
#include "kernels/layer/layer.h"

namespace recur::kernels {

int64_t table_row_bytes(TableType type, int64_t n) {
  switch (type) {
    case TableType::kF32: return 4 * n;
    case TableType::kF16: case TableType::kBF16: return 2 * n;
    case TableType::kQ8_0: return n / 32 * 34;
  }
  return 0;
}

Status embedding_gather(const void* table, TableType type, int64_t vocab, int64_t n, std::span<const int32_t> ids,
                        float* out, const LayerOps& ops) {
  if (type == TableType::kQ8_0 && n % 32 != 0) return invalid_argument("embedding_gather: q8_0 row {} % 32 != 0", n);
  for (size_t t = 0; t < ids.size(); ++t)
    if (ids[t] < 0 || ids[t] >= vocab)
      return invalid_argument("embedding_gather: ids[{}]={} is outside [0, {})", t, ids[t], vocab);
  const int64_t row_bytes = table_row_bytes(type, n);
  const auto* base = static_cast<const uint8_t*>(table);
  for (size_t t = 0; t < ids.size(); ++t) {
    const uint8_t* row = base + int64_t(ids[t]) * row_bytes;
    float* y = out + int64_t(t) * n;
    switch (type) {
      case TableType::kF32: std::memcpy(y, row, size_t(row_bytes)); break;
      case TableType::kF16:
        RECUR_RETURN_IF_ERROR(fp16_to_fp32(std::span(reinterpret_cast<const uint16_t*>(row), size_t(n)), std::span(y, size_t(n))));
        break;
      case TableType::kBF16:
        RECUR_RETURN_IF_ERROR(bf16_to_fp32(std::span(reinterpret_cast<const uint16_t*>(row), size_t(n)), std::span(y, size_t(n))));
        break;
      case TableType::kQ8_0:
        for (int64_t b = 0; b < n / 32; ++b) {
          const uint8_t* blk = row + b * 34;
          uint16_t d;
          std::memcpy(&d, blk, 2);
          ops.dequant_q8_0(reinterpret_cast<const int8_t*>(blk + 2), fp16_to_fp32(d), y + b * 32);
        }
        break;
    }
  }
  return ok_status();
}

}  // namespace recur::kernels
