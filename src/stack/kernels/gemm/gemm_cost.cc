// The cost model of gemm_cost.h.
#include "kernels/gemm/gemm_cost.h"

namespace recur::gemm {

Cost gemm_cost(Precision p, int64_t m, int64_t n, int64_t k) {
  const double nk = double(n) * double(k);
  double wbytes = 4 * nk;
  switch (p) {
    case Precision::kF32:
    case Precision::kTf32: wbytes = 4 * nk; break;
    case Precision::kTf32x3: wbytes = 8 * nk; break;
    case Precision::kBf16: wbytes = 2 * nk; break;
    case Precision::kBf16x3: wbytes = 4 * nk; break;
    case Precision::kBf16x6: wbytes = 6 * nk; break;
    case Precision::kW8A8: wbytes = nk + 8.0 * double(n); break;
  }
  Cost c;
  c.bytes = wbytes + 4.0 * double(m) * double(k) + 4.0 * double(m) * double(n);
  c.flops = 2.0 * double(m) * nk;
  const bool split = p == Precision::kBf16x3 || p == Precision::kTf32x3;
  c.issued_flops = p == Precision::kBf16x6 ? 6 * c.flops : split ? 3 * c.flops : c.flops;
  return c;
}

Cost stored_cost(WeightFormat f, int64_t m, int64_t n, int64_t k) {
  Cost c;
  c.bytes = double(row_bytes(f, k)) * double(n) + 4.0 * double(m) * double(k) + 4.0 * double(m) * double(n);
  c.flops = 2.0 * double(m) * double(n) * double(k);
  c.issued_flops = c.flops;
  return c;
}

}  // namespace recur::gemm
