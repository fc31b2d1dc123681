#include "engine/ggml_matmul.h"

#include <cstring>
#include <vector>

#include "core/convert.h"
#include "core/thread_pool.h"
#include "trace/trace.h"

namespace recur {

namespace {

thread_local int64_t tile_tokens_override = 0;  // 0: the call's own m

// Row r of w in row form: the stored row, or the regrouped one copied out into `buf`.
const std::byte* ggml_row_of(const Weight& w, int64_t r, std::vector<std::byte>& buf) {
  if (!w.regrouped) return w.data + size_t(r) * w.row_bytes();
  buf.resize(w.row_bytes());
  ungroup_row(w, r, buf.data());
  return buf.data();
}

template <class T, class Dot>
void ggml_outputs(const Weight& w, const T* x, int64_t m, float* y, ThreadPool* pool, const Dot& dot) {
  const int64_t k = w.cols;
  auto rows = [&](int64_t begin, int64_t end, int) {
    std::vector<std::byte> buf;
    for (int64_t r = begin; r < end; ++r) {
      const T* row = reinterpret_cast<const T*>(ggml_row_of(w, r, buf));
      for (int64_t i = 0; i < m; ++i) y[i * w.rows + r] = dot(k, row, x + i * k);
    }
  };
  if (pool != nullptr) pool->parallel_for(w.rows, rows);
  else rows(0, w.rows, 0);
}

}  // namespace

bool ggml_matmul_takes(const Weight& w) {
  return (w.type == gguf::TensorType::kF32 && !w.regrouped) || w.type == gguf::TensorType::kF16;
}

void matmul_ggml(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool, const GgmlMatmul& g) {
  RECUR_ZONE("matvec");
  zone.arg("rows", w.rows);
  zone.arg("m", m);
  zone.arg("dtype", gguf::tensor_type_name_static(w.type));
  const int64_t tokens = tile_tokens_override > 0 ? tile_tokens_override : m;
  const bool tiles = !g.vec_dot_only && ggml_arith::tiles_take(g.isa, w.rows, tokens, w.cols);
  zone.arg("ggml", tiles ? "tiles" : "vec_dot");
  const ggml_arith::GgmlIsa isa = g.isa;
  if (w.type == gguf::TensorType::kF32) {
    ggml_outputs<float>(w, x, m, y, pool, [&](int64_t k, const float* a, const float* b) {
      return tiles ? ggml_arith::tile_dot_f32(isa, k, a, b) : ggml_arith::vec_dot_f32(isa, k, a, b);
    });
    return;
  }
  // F16: ggml converts the activations to its vec_dot_type first (round to nearest even).
  std::vector<uint16_t> half(size_t(m * w.cols));
  for (size_t i = 0; i < half.size(); ++i) half[i] = fp32_to_fp16(x[i]);
  ggml_outputs<uint16_t>(w, half.data(), m, y, pool, [&](int64_t k, const uint16_t* a, const uint16_t* b) {
    return tiles ? ggml_arith::tile_dot_f16(isa, k, a, b) : ggml_arith::vec_dot_f16(isa, k, a, b);
  });
}

void matmul_ggml_or_stored(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool,
                           const GgmlMatmul& g, gemm::Activations act) {
  if (ggml_matmul_takes(w)) matmul_ggml(w, x, m, y, pool, g);
  else matmul(w, x, m, y, pool, act);
}

GgmlTileTokensScope::GgmlTileTokensScope(int64_t tokens) : saved_(tile_tokens_override) {
  tile_tokens_override = tokens;
}
GgmlTileTokensScope::~GgmlTileTokensScope() { tile_tokens_override = saved_; }

}  // namespace recur
