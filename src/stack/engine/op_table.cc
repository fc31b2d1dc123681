#include "engine/op_table.h"

#include <string>

#include <fmt/format.h>

namespace recur {

void OpTapper::record(Op op, int layer, const float* data, int64_t n, int64_t offset, int64_t whole) const {
  const OpSpec& spec = op_spec(op);
  // Replicated tensors are rank 0's.
  if ((spec.shard == OpShard::kWhole || replicated_) && rank_ != 0) return;
  auto name = [&](std::string_view o) {
    if (o == "<last>") return fmt::format("layer.{}.residual", layers_ - 1);
    if (spec.global) return std::string(o);
    if (o == "<stream>") return layer == 0 ? std::string("embed") : fmt::format("layer.{}.residual", layer - 1);
    return fmt::format("layer.{}.{}", layer, o);
  };
  OpRecord rec{.name = name(spec.name), .component = std::string(spec.component), .inputs = {}, .rank = rank_,
               .shard = spec.shard, .offset = offset, .size = whole > 0 ? whole : n,
               .data = std::span<const float>(data, size_t(n))};
  for (std::string_view in : spec.inputs)
    if (!in.empty()) rec.inputs.push_back(name(in));
  tap_->record(rec);
}

}  // namespace recur
