// Q8_0 in groups of 16 rows (WeightFormat::kQ8_0R16): the regrouping and its inverse, the
// scalar kernel every ISA path must match bit for bit, and the driver gemm_stored calls.
#include <cmath>
#include <cstring>

#include "core/dispatch.h"
#include "core/convert.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {
namespace {

constexpr int64_t kChunks = kQ8Block / 4;                              // 8 chunks of 4 bytes per block
constexpr size_t kGroupBlockQuants = size_t(kQ8R16Rows) * kQ8Block;    // 512 bytes per block
constexpr size_t kGroupBlockScales = size_t(kQ8R16Rows) * 2;           // 32 bytes per block

size_t group_bytes(int64_t k) { return size_t(kQ8R16Rows) * row_bytes(WeightFormat::kQ8_0, k); }

void scalar_groups(const Q8R16Args& a, int64_t g0, int64_t g1) {
  const int64_t blocks = a.k / kQ8Block;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* quants = a.w + size_t(g) * group_bytes(a.k);
    const uint8_t* scales = quants + size_t(blocks) * kGroupBlockQuants;
    for (int64_t t = 0; t < a.m; ++t) {
      const int8_t* xq = a.xq + t * a.k;
      for (int r = 0; r < kQ8R16Rows; ++r) {
        float f = 0;
        for (int64_t b = 0; b < blocks; ++b) {
          int32_t s = 0;
          for (int64_t j = 0; j < kChunks; ++j)
            for (int i = 0; i < 4; ++i)
              s += int32_t(quants[size_t(b) * kGroupBlockQuants + size_t(j * 64 + r * 4 + i)]) *
                   int32_t(xq[b * kQ8Block + j * 4 + i]);
          s -= a.corr[t * blocks + b];
          uint16_t h;
          std::memcpy(&h, scales + size_t(b) * kGroupBlockScales + 2 * size_t(r), 2);
          f = std::fma(float(s), fp16_to_fp32(h) * a.dx[t * blocks + b], f);
        }
        a.y[t * a.ldy + g * kQ8R16Rows + r] = f;
      }
    }
  }
}

void scalar_prepare(const float* x, int64_t k, int64_t t0, int64_t t1, int8_t* xq, float* dx, int32_t* corr) {
  const int64_t blocks = k / kQ8Block;
  quantize_q8_0_rows(x + t0 * k, t1 - t0, k, xq + t0 * k, dx + t0 * blocks);
  for (int64_t b = t0 * blocks; b < t1 * blocks; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < kQ8Block; ++i) sum += xq[b * kQ8Block + i];
    corr[b] = 128 * sum;
  }
}

}  // namespace

const Q8R16Kernels kScalarQ8R16{.groups = scalar_groups, .prepare = scalar_prepare};

const Q8R16Kernels& q8r16_kernels(Isa isa) {
  if (isa >= Isa::kAvx512 && cpu_features().avx512vnni) return kAvx512Q8R16;
  if (isa >= Isa::kAvx2) return kAvx2Q8R16;
  return kScalarQ8R16;
}

Status repack_q8_0_r16(const void* q8_0_rows, int64_t n, int64_t k, void* out) {
  if (n < 1 || n % kQ8R16Rows != 0 || k < 1 || k % kQ8Block != 0 || q8_0_rows == nullptr || out == nullptr)
    return invalid_argument("repack_q8_0_r16: [{}, {}]: expected n a multiple of 16, k of 32, and data", n, k);
  const auto* src = static_cast<const uint8_t*>(q8_0_rows);
  auto* dst = static_cast<uint8_t*>(out);
  const int64_t blocks = k / kQ8Block;
  const size_t rb = row_bytes(WeightFormat::kQ8_0, k);
  for (int64_t g = 0; g < n / kQ8R16Rows; ++g) {
    uint8_t* quants = dst + size_t(g) * group_bytes(k);
    uint8_t* scales = quants + size_t(blocks) * kGroupBlockQuants;
    for (int r = 0; r < kQ8R16Rows; ++r) {
      const uint8_t* row = src + size_t(g * kQ8R16Rows + r) * rb;
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* blk = row + size_t(b) * kQ8BlockBytes;
        std::memcpy(scales + size_t(b) * kGroupBlockScales + 2 * size_t(r), blk, 2);
        for (int64_t j = 0; j < kChunks; ++j)
          for (int i = 0; i < 4; ++i)
            quants[size_t(b) * kGroupBlockQuants + size_t(j * 64 + r * 4 + i)] =
                uint8_t(int(int8_t(blk[2 + j * 4 + i])) + 128);
      }
    }
  }
  return ok_status();
}

void q8_0_r16_row(const void* r16, int64_t k, int64_t r, void* q8_0_row) {
  const int64_t blocks = k / kQ8Block, lane = r % kQ8R16Rows;
  const uint8_t* quants = static_cast<const uint8_t*>(r16) + size_t(r / kQ8R16Rows) * group_bytes(k);
  const uint8_t* scales = quants + size_t(blocks) * kGroupBlockQuants;
  auto* row = static_cast<uint8_t*>(q8_0_row);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* blk = row + size_t(b) * kQ8BlockBytes;
    std::memcpy(blk, scales + size_t(b) * kGroupBlockScales + 2 * size_t(lane), 2);
    for (int64_t j = 0; j < kChunks; ++j)
      for (int i = 0; i < 4; ++i)
        blk[2 + j * 4 + i] = uint8_t(int8_t(int(quants[size_t(b) * kGroupBlockQuants + size_t(j * 64 + lane * 4 + i)]) - 128));
  }
}

}  // namespace recur::gemm
