#include "engine/projection.h"

#include <vector>

#include "trace/trace.h"

namespace recur {

Result<Projection> Projection::create(const Weight& w, gemm::Precision precision, gemm::Activations act) {
  Projection p;
  p.view_ = w;
  p.precision_ = precision;
  p.act_ = act;
  const bool in_place = precision == gemm::Precision::kF32 ||
                        (w.type == gguf::TensorType::kBF16 &&
                         (precision == gemm::Precision::kBf16 || precision == gemm::Precision::kBf16x3 ||
                          precision == gemm::Precision::kBf16x6));
  if (in_place) return p;
  std::vector<float> wide(size_t(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) w.dequantize_row(r, wide.data() + r * w.cols);
  auto packed = gemm::PackedWeights::pack(wide, w.rows, w.cols, precision);
  if (!packed) return unexpected(packed.error().with_context(fmt::format("tensor '{}'", w.name)));
  p.packed_ = std::move(*packed);
  return p;
}

Result<Projection> Projection::create(std::unique_ptr<OwnedWeight> owned, gemm::Precision precision,
                                      gemm::Activations act) {
  RECUR_ASSIGN_OR_RETURN(Projection p, create(owned->view, precision, act));
  p.owned_ = std::move(owned);
  return p;
}

void Projection::apply(const float* x, int64_t m, float* y, ThreadPool* pool) const {
  if (precision_ == gemm::Precision::kF32) {
    matmul(view_, x, m, y, pool, act_);
    return;
  }
  RECUR_ZONE("matvec");
  zone.arg("rows", view_.rows);
  zone.arg("cols", view_.cols);
  zone.arg("m", m);
  zone.arg("precision", gemm::precision_name(precision_).data());
  thread_local gemm::Workspace ws;
  // Shapes and precision were checked when the projection was made, so these cannot fail.
  if (packed_) {
    (void)gemm::gemm(*packed_, x, m, y, gemm::Options{}, pool, ws);
  } else {
    (void)gemm::gemm_stored_bf16({.format = gemm::WeightFormat::kBf16, .n = view_.rows, .k = view_.cols,
                                  .data = view_.data},
                                 precision_, x, m, y, pool, &ws);
  }
}

}  // namespace recur
