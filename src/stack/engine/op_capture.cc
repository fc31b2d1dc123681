#include "engine/op_capture.h"

#include <algorithm>

namespace recur {

void OpCapture::record(const OpRecord& r) {
  std::lock_guard lock(mu_);
  const int step = std::max(step_, 0);
  auto it = index_.find(r.name);
  if (it == index_.end()) {
    it = index_.emplace(r.name, ops_.size()).first;
    ops_.push_back({r.name, r.component, r.inputs, {}, false});
  }
  Op& op = ops_[it->second];
  // Rank 0 records every op (replicated ones only there), so its order is the op order.
  if (r.rank == 0 && !op.placed) {
    op.placed = true;
    order_.push_back(it->second);
  }
  if (op.steps.size() <= size_t(step)) op.steps.resize(size_t(step) + 1);
  std::vector<double>& whole = op.steps[size_t(step)];
  if (whole.empty()) whole.assign(size_t(r.size), 0.0);
  switch (r.shard) {
    case OpShard::kWhole:
    case OpShard::kSlice:
      for (size_t i = 0; i < r.data.size(); ++i) whole[size_t(r.offset) + i] = r.data[i];
      break;
    case OpShard::kPartial:
      for (size_t i = 0; i < r.data.size(); ++i) whole[i] += r.data[i];
      break;
  }
}

std::vector<const OpCapture::Op*> OpCapture::ops() const {
  std::vector<const Op*> out;
  for (size_t i : order_) out.push_back(&ops_[i]);
  return out;
}

const OpCapture::Op* OpCapture::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &ops_[it->second];
}

}  // namespace recur
