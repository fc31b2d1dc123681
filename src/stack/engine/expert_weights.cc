#include "engine/expert_weights.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/w8a8.h"

namespace recur {

Result<std::vector<Weight>> bind_experts(const gguf::File& f, const std::string& name, int experts, int64_t rows,
                                         int64_t cols) {
  const gguf::TensorInfo* t = f.tensor(name);
  if (t == nullptr) return not_found("{}: tensor '{}' is missing", f.source(), name);
  if (t->dims != std::vector<uint64_t>{uint64_t(cols), uint64_t(rows), uint64_t(experts)})
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [{}, {}, {}]", f.source(), name,
                       t->info_position, fmt::join(t->dims, ", "), cols, rows, experts);
  std::vector<Weight> out;
  for (int e = 0; e < experts; ++e) {
    Weight w{fmt::format("{}[{}]", name, e), t->type, rows, cols, nullptr};
    w.data = t->data + size_t(e) * size_t(rows) * w.row_bytes();
    if (t->type == gguf::TensorType::kI8) RECUR_RETURN_IF_ERROR(attach_w8a8(f, *t, w, e, experts));
    out.push_back(w);
  }
  return out;
}

}  // namespace recur
