// KernelInstance: one set of a kernel's tensors for one shape, and running a variant on it,
// whole or as P shards. bench and check both run kernels through it.
//
// Buffers are 64-byte aligned and contiguous (row-major). When partitioned, shard p of P gets
// the sub-shape with the partitioning parameter set to its extent and views sliced along each
// tensor's partition_dim (kernels/registry.h); shards run one after another and each writes
// its slice of the full outputs. Not thread-safe: one instance per thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/status.h"
#include "core/tensor.h"
#include "kernels/registry.h"
#include "probe/check_inputs.h"

namespace recur::probe {

class KernelInstance {
 public:
  // Fails for dtypes check cannot handle or shapes the spec rejects.
  static Result<KernelInstance> make(const kernels::KernelSpec& spec, const kernels::Shape& shape);

  const kernels::KernelSpec& spec() const { return *spec_; }
  const kernels::Shape& shape() const { return shape_; }
  std::span<const TensorView> inputs() const { return inputs_; }
  std::span<const TensorView> outputs() const { return outputs_; }

  // Fills every input from `d`; returns each input's values as stored (rounded to its dtype).
  std::vector<std::vector<double>> fill_inputs(Distribution d, uint64_t seed);
  void fill_outputs_sentinel();
  void fill_outputs_zero();
  std::vector<double> output_values(size_t output) const;

  // Runs the variant on the whole problem (shards == 1) or as `shards` shards. Fails when the
  // kernel has no partitioning, or when the partitioned extent is smaller than `shards`.
  Status run(const kernels::VariantSpec& variant, int shards = 1);

  // Bytes of all inputs and outputs: the working set of one call.
  uint64_t bytes() const;

 private:
  const kernels::KernelSpec* spec_ = nullptr;
  kernels::Shape shape_;
  std::vector<AlignedBuffer> buffers_;  // inputs, then outputs
  std::vector<TensorView> inputs_;
  std::vector<TensorView> outputs_;
};

// Coordinates of flat element `flat` of a contiguous tensor of these dims.
std::vector<int64_t> unflatten(int64_t flat, std::span<const int64_t> dims);

}  // namespace recur::probe
