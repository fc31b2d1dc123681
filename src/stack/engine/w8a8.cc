#include "engine/w8a8.h"

#include <cmath>
#include <memory>
#include <span>

#include <fmt/ranges.h>

#include "core/convert.h"
#include "kernels/gemm/gemm.h"

namespace recur {

Status attach_w8a8(const gguf::File& file, const gguf::TensorInfo& t, Weight& w, int64_t index, int64_t count) {
  const std::string scale_name = t.name + ".scale";
  const gguf::TensorInfo* s = file.tensor(scale_name);
  if (s == nullptr)
    return parse_error("{}: I8 tensor '{}' (info at byte {}) has no '{}': W8A8 weights need an F32 scale per row",
                       file.source(), t.name, t.info_position, scale_name);
  if (s->type != gguf::TensorType::kF32)
    return parse_error("{}: tensor '{}' (info at byte {}) has type {}, expected F32 (the scales of I8 '{}')",
                       file.source(), scale_name, s->info_position, gguf::tensor_type_name(uint32_t(s->type)),
                       t.name);
  std::vector<uint64_t> want{uint64_t(w.rows)};
  if (count > 1) want.push_back(uint64_t(count));
  std::vector<uint64_t> got = s->dims;
  while (got.size() > want.size() && got.back() == 1) got.pop_back();
  if (got != want)
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [{}] (one scale per row of '{}')",
                       file.source(), scale_name, s->info_position, fmt::join(s->dims, ", "), fmt::join(want, ", "),
                       t.name);
  w.scale = reinterpret_cast<const float*>(s->data) + index * w.rows;
  for (int64_t r = 0; r < w.rows; ++r) {
    if (!std::isfinite(w.scale[r]) || w.scale[r] < 0)
      return parse_error("{}: tensor '{}' (info at byte {}): scale {} of row {} is not a finite value >= 0",
                         file.source(), scale_name, s->info_position, w.scale[r], index * w.rows + r);
  }
  refresh_w8a8_compensation(w);
  return ok_status();
}

void refresh_w8a8_compensation(Weight& w) {
  auto comp = std::make_shared<std::vector<int32_t>>(size_t(w.rows));
  gemm::w8a8_compensation(reinterpret_cast<const int8_t*>(w.data), w.rows, w.cols, comp->data());
  w.comp = comp->data();
  w.comp_cols = w.cols;
  w.comp_owner = std::move(comp);
}

bool matmul_w8a8(const Weight& w, const float* x, int64_t m, float* y, ThreadPool* pool) {
  std::vector<int32_t> stale_comp;  // a column shard made after binding: its sums, this call only
  const int32_t* comp = w.comp;
  if (comp == nullptr || w.comp_cols != w.cols) {
    stale_comp.resize(size_t(w.rows));
    gemm::w8a8_compensation(reinterpret_cast<const int8_t*>(w.data), w.rows, w.cols, stale_comp.data());
    comp = stale_comp.data();
  }
  const gemm::W8A8View view{.n = w.rows, .k = w.cols, .q = reinterpret_cast<const int8_t*>(w.data),
                            .scales = w.scale, .comp = comp};
  return gemm::gemm_w8a8_stored(view, x, m, y, pool).has_value();
}

Result<std::vector<std::byte>> quantize_w8a8(const float* w, int64_t rows, int64_t cols, std::vector<float>& scales) {
  const size_t n = size_t(rows * cols);
  std::vector<std::byte> q(n);
  scales.assign(size_t(rows), 0.0f);
  RECUR_RETURN_IF_ERROR(quantize_int8_rows(std::span(w, n), size_t(rows), size_t(cols),
                                           std::span(reinterpret_cast<int8_t*>(q.data()), n), scales));
  return q;
}

}  // namespace recur
