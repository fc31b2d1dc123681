#include "engine/projection.h"

#include <vector>

#include "core/thread_pool.h"
#include "kernels/gemv/gemv.h"
#include "trace/trace.h"

namespace recur {

namespace {

std::vector<float> widened(const Weight& w) {
  std::vector<float> wide(size_t(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) w.dequantize_row(r, wide.data() + r * w.cols);
  return wide;
}

Result<gemm::PackedWeights> packed(const Weight& w, gemm::Precision precision) {
  auto p = gemm::PackedWeights::pack(widened(w), w.rows, w.cols, precision);
  if (!p) return unexpected(p.error().with_context(fmt::format("tensor '{}'", w.name)));
  return std::move(*p);
}

using GemvFn = void (*)(const float*, const float*, float*, int64_t, int64_t);

GemvFn gemv_fn(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return kernels::gemv_avx512;
    case Isa::kAvx2: return kernels::gemv_avx2;
    default: return kernels::gemv_scalar;
  }
}

}  // namespace

Result<Projection> Projection::create(const Weight& w, gemm::Precision precision, gemm::Activations act) {
  return create(w, precision, ProjectionForm{.act = act});
}

Result<Projection> Projection::create(std::unique_ptr<OwnedWeight> owned, gemm::Precision precision,
                                      gemm::Activations act) {
  return create(std::move(owned), precision, ProjectionForm{.act = act});
}

Result<Projection> Projection::create(const Weight& w, gemm::Precision precision, const ProjectionForm& form) {
  Projection p;
  p.view_ = w;
  p.precision_ = precision;
  p.act_ = form.act;
  p.kernels_ = form.kernels;
  if (form.ggml && precision == gemm::Precision::kF32 && ggml_matmul_takes(w)) {
    p.ggml_ = form.ggml;
    return p;  // matmul_ggml reads the stored weights: nothing to pack
  }
  if (form.kernels.gemm) {
    RECUR_ASSIGN_OR_RETURN(p.gemm_packed_, packed(w, form.kernels.gemm->precision));
  }
  const bool in_place = precision == gemm::Precision::kF32 ||
                        (w.type == gguf::TensorType::kBF16 &&
                         (precision == gemm::Precision::kBf16 || precision == gemm::Precision::kBf16x3 ||
                          precision == gemm::Precision::kBf16x6));
  if (in_place) return p;
  RECUR_ASSIGN_OR_RETURN(p.packed_, packed(w, precision));
  return p;
}

Result<Projection> Projection::create(std::unique_ptr<OwnedWeight> owned, gemm::Precision precision,
                                      const ProjectionForm& form) {
  RECUR_ASSIGN_OR_RETURN(Projection p, create(owned->view, precision, form));
  p.owned_ = std::move(owned);
  return p;
}

namespace {

// The zone args of a packed gemm() call beside m and its variant (4 at most, trace.h): the tiles
// where the tiled algorithm runs, else the weight's shape.
void tile_args(trace::Zone& zone, const gemm::Options& o, bool tiled, const Weight& w) {
  if (tiled) {
    zone.arg("kc", int64_t(o.kc));
    zone.arg("mc", int64_t(o.mc));
  } else {
    zone.arg("rows", w.rows);
    zone.arg("cols", w.cols);
  }
}

}  // namespace

// y = W x through the registered gemv: each thread a run of whole rows (bits independent of the pool).
void Projection::apply_gemv(const float* x, float* y, ThreadPool* pool) const {
  const KernelChoice& k = *kernels_.gemv;
  RECUR_ZONE("gemv");
  zone.arg("rows", view_.rows);
  zone.arg("cols", view_.cols);
  zone.arg("variant", k.variant.data());
  const GemvFn fn = gemv_fn(k.isa);
  const auto* w = reinterpret_cast<const float*>(view_.data);
  const int64_t cols = view_.cols;
  auto rows = [&](int64_t begin, int64_t end, int) { fn(w + begin * cols, x, y + begin, end - begin, cols); };
  if (pool != nullptr) pool->parallel_for(view_.rows, rows);
  else rows(0, view_.rows, 0);
}

// Y = X W^T through the registered gemm at kernel.gemm.variant's precision and algorithm.
void Projection::apply_gemm(const float* x, int64_t m, float* y, ThreadPool* pool) const {
  const GemmVariant& g = *kernels_.gemm;
  const gemm::Options& o = kernels_.options;
  RECUR_ZONE("gemm");
  zone.arg("m", m);
  zone.arg("variant", g.variant.data());
  tile_args(zone, o, gemm::runs_tiled(g.precision, m, o), view_);
  thread_local gemm::Workspace ws;
  (void)gemm::gemm(*gemm_packed_, x, m, y, o, pool, ws);  // shapes were checked when packed
}

void Projection::apply(const float* x, int64_t m, float* y, ThreadPool* pool) const {
  if (ggml_) return matmul_ggml(view_, x, m, y, pool, *ggml_);
  if (m > 1 && gemm_packed_) return apply_gemm(x, m, y, pool);
  if (m == 1 && kernels_.gemv && precision_ == gemm::Precision::kF32) {
    if (view_.type == gguf::TensorType::kF32 && !view_.regrouped) return apply_gemv(x, y, pool);
    // The registered gemv reads F32 rows only: these weights keep the stored GEMV, and say so.
    RECUR_ZONE("gemv");
    zone.arg("variant", "stored");
    zone.arg("requested", kernels_.gemv->variant.data());
    matmul(view_, x, m, y, pool, act_);
    return;
  }
  if (precision_ == gemm::Precision::kF32) {
    matmul(view_, x, m, y, pool, act_);
    return;
  }
  thread_local gemm::Workspace ws;
  const gemm::Options& o = kernels_.options;
  if (precision_ == gemm::Precision::kW8A8) {
    // The registered gemm_w8a8 (its one variant runs exactly this packed gemm()).
    RECUR_ZONE("gemm_w8a8");
    zone.arg("rows", view_.rows);
    zone.arg("cols", view_.cols);
    zone.arg("m", m);
    zone.arg("variant", kernels_.gemm_w8a8.variant.data());
    (void)gemm::gemm(*packed_, x, m, y, o, pool, ws);
    return;
  }
  RECUR_ZONE("matvec");
  zone.arg("m", m);
  zone.arg("precision", gemm::precision_name(precision_).data());
  tile_args(zone, o, packed_ && gemm::runs_tiled(precision_, m, o), view_);
  // Shapes and precision were checked when the projection was made, so these cannot fail.
  if (packed_) {
    (void)gemm::gemm(*packed_, x, m, y, o, pool, ws);
  } else {
    (void)gemm::gemm_stored_bf16({.format = gemm::WeightFormat::kBf16, .n = view_.rows, .k = view_.cols,
                                  .data = view_.data},
                                 precision_, x, m, y, pool, &ws);
  }
}

}  // namespace recur
