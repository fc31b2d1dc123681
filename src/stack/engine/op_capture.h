// OpCapture: an OpTap that keeps every op's whole tensor at every step, assembled from the
// ranks' records (slices placed at their offsets, row-parallel partials summed in double), for
// comparing two runs op by op (gate/op_errors.h). Ops are listed in rank 0's execution order.
// Thread-safe: ranks record concurrently; call begin_step() between steps, not during one.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/op_tap.h"

namespace recur {

class OpCapture final : public OpTap {
 public:
  struct Op {
    std::string name, component;
    std::vector<std::string> inputs;
    std::vector<std::vector<double>> steps;  // the whole tensor at each step
    bool placed = false;                     // in order_ (rank 0 recorded it)
  };

  // Starts the next step (the first call starts step 0).
  void begin_step() { ++step_; }
  void record(const OpRecord& r) override;

  // Every op, in rank 0's execution order.
  std::vector<const Op*> ops() const;
  const Op* find(const std::string& name) const;
  int steps() const { return step_ + 1; }

 private:
  std::mutex mu_;
  int step_ = -1;
  std::vector<Op> ops_;
  std::vector<size_t> order_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace recur
