#include "probe/kernel_harness.h"

#include <cstring>

#include "probe/check_numeric.h"

namespace recur::probe {

using kernels::KernelCall;
using kernels::KernelSpec;
using kernels::Shape;
using kernels::TensorSpec;
using kernels::VariantSpec;

Result<KernelInstance> KernelInstance::make(const KernelSpec& spec, const Shape& shape) {
  RECUR_RETURN_IF_ERROR(spec.validate_shape(shape));
  KernelInstance k;
  k.spec_ = &spec;
  k.shape_ = shape;
  for (const auto* group : {&spec.inputs, &spec.outputs}) {
    for (const TensorSpec& t : *group) {
      if (!check_supports(t.dtype))
        return unsupported("kernel {}: tensor {} has dtype {}, which the probes cannot fill or compare", spec.name, t.name,
                           dtype_name(t.dtype));
      std::vector<int64_t> dims = t.dims(shape);
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      k.buffers_.emplace_back(size_t(n) * dtype_size(t.dtype) + 64);
      RECUR_ASSIGN_OR_RETURN(TensorView view, TensorView::make(k.buffers_.back().data(), t.dtype, dims));
      (group == &spec.inputs ? k.inputs_ : k.outputs_).push_back(view);
    }
  }
  return k;
}

std::vector<std::vector<double>> KernelInstance::fill_inputs(Distribution d, uint64_t seed) {
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const TensorView& v = inputs_[i];
    std::vector<double> raw(size_t(v.numel()));
    generate_values(d, seed, int(i), v.dtype(), raw);
    store_from_double(v.dtype(), raw.data(), v.data(), raw.size());
    for (size_t j = 0; j < raw.size(); ++j) raw[j] = load_as_double(v.dtype(), v.data(), j);
    values.push_back(std::move(raw));
  }
  return values;
}

void KernelInstance::fill_outputs_sentinel() {
  for (const TensorView& v : outputs_) fill_sentinel(v.dtype(), v.data(), size_t(v.numel()));
}

void KernelInstance::fill_outputs_zero() {
  for (const TensorView& v : outputs_) std::memset(v.data(), 0, v.span_bytes());
}

std::vector<double> KernelInstance::output_values(size_t output) const {
  const TensorView& v = outputs_[output];
  std::vector<double> out(size_t(v.numel()));
  for (size_t j = 0; j < out.size(); ++j) out[j] = load_as_double(v.dtype(), v.data(), j);
  return out;
}

Status KernelInstance::run(const VariantSpec& variant, int shards) {
  RECUR_RETURN_IF_ERROR(kernels::check_runnable(variant));
  if (shards == 1) {
    variant.run(KernelCall{shape_, inputs_, outputs_, 0, 1});
    return ok_status();
  }
  if (!spec_->partitioning) return invalid_argument("kernel {} has no partitioning; --partitions needs one", spec_->name);
  if (shards < 1) return invalid_argument("kernel {}: {} partitions", spec_->name, shards);
  const std::string& param = spec_->partitioning->param;
  const int64_t extent = shape_[param];
  if (extent < shards)
    return invalid_argument("kernel {}: cannot split {}={} into {} shards", spec_->name, param, extent, shards);
  std::vector<TensorView> in(inputs_.size()), out(outputs_.size());
  for (int p = 0; p < shards; ++p) {
    const auto range = kernels::shard_range(extent, shards, p);
    const int64_t begin = range.first, end = range.second;  // not a structured binding: lambdas capture it (clang-14)
    Shape sub = shape_;
    sub.set(param, end - begin);
    auto slice_all = [&](const std::vector<TensorSpec>& specs, const std::vector<TensorView>& full,
                         std::vector<TensorView>& dst) -> Status {
      for (size_t i = 0; i < full.size(); ++i) {
        if (specs[i].partition_dim < 0) {
          dst[i] = full[i];
          continue;
        }
        RECUR_ASSIGN_OR_RETURN(dst[i], full[i].slice(specs[i].partition_dim, begin, end));
      }
      return ok_status();
    };
    RECUR_RETURN_IF_ERROR(slice_all(spec_->inputs, inputs_, in));
    RECUR_RETURN_IF_ERROR(slice_all(spec_->outputs, outputs_, out));
    variant.run(KernelCall{sub, in, out, p, shards});
  }
  return ok_status();
}

uint64_t KernelInstance::bytes() const {
  uint64_t total = 0;
  for (const auto* group : {&inputs_, &outputs_})
    for (const TensorView& v : *group) total += v.span_bytes();
  return total;
}

std::vector<int64_t> unflatten(int64_t flat, std::span<const int64_t> dims) {
  std::vector<int64_t> index(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = dims[i] > 0 ? flat % dims[i] : 0;
    flat = dims[i] > 0 ? flat / dims[i] : 0;
  }
  return index;
}

}  // namespace recur::probe
