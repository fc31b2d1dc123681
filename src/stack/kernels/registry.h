// The kernel registry: the contract between kernels and the probes (bench, check) that judge them.
//
// A KernelSpec says everything a probe needs to run and judge a kernel without knowing it:
//   - its shape parameters ("M64,N4096"), with defaults and ranges;
//   - its input and output tensors: dtype, dims as a function of the shape, coordinate names
//     and tile sizes (so an error is reported as "row 17, col 300, tile (2, 1), shard 1");
//   - a float64 reference, which also returns each output's error scale ("magnitude": |y|, or
//     sum |a_i b_i| for a dot product, so cancellation is judged against the terms, not the sum);
//   - a cost model (bytes moved, FLOPs) for roofline fractions;
//   - tolerances per dtype (overriding check's defaults, docs/probes.md);
//   - optional partitioning: one shape parameter split into P contiguous shards, tensors sliced
//     along the matching dim, each shard writing its slice of the full output;
//   - named variants with parameters and the ISA each needs. Variants are knobs:
//     "kernel.<name>.variant" (registered with the kernel, "auto" = best runnable).
//
// Built-in kernels are registered on first use of KernelRegistry::global() (builtin_kernels.cc);
// tests build their own registries, e.g. with cheating variants. Registration happens before
// use; lookups are read-only and thread-safe. Variant functions must be callable concurrently
// on disjoint arguments.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor.h"

namespace recur::kernels {

struct ShapeParam {
  std::string name;  // letters only: "M", "HV"
  int64_t default_value = 1;
  int64_t min = 1;
  int64_t max = int64_t(1) << 32;
  std::string help;
};

// Named integer parameters in the kernel's declaration order.
class Shape {
 public:
  Shape() = default;
  explicit Shape(std::vector<std::pair<std::string, int64_t>> params) : params_(std::move(params)) {}

  std::optional<int64_t> find(std::string_view name) const;
  // The parameter's value; the name must exist (a programming error otherwise: aborts).
  int64_t operator[](std::string_view name) const;
  void set(std::string_view name, int64_t value);
  const std::vector<std::pair<std::string, int64_t>>& params() const { return params_; }
  // "M64,N4096"
  std::string to_string() const;
  bool operator==(const Shape&) const = default;

 private:
  std::vector<std::pair<std::string, int64_t>> params_;
};

// Parses "M64,N4096" (also "M=64,N=4096"; spaces ignored) against `params`. Unnamed parameters
// take their defaults. Errors name the item and list the parameters that exist.
Result<Shape> parse_shape(std::string_view text, std::span<const ShapeParam> params);

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::function<std::vector<int64_t>(const Shape&)> dims;
  std::vector<std::string> coords;  // one name per dim: {"row", "col"}
  std::vector<int64_t> tile;        // tile extent per dim for error tables (empty: whole dims)
  int partition_dim = -1;           // dim split across shards; -1: every shard reads all of it
};

struct Tolerance {
  double atol = 0;  // |got - ref| <= atol + rtol * magnitude
  double rtol = 0;
};

// What a variant is called with: the (sub-)problem shape and views of its tensors, in the order
// of the spec's inputs and outputs. When partitioned, shape and views are this shard's.
struct KernelCall {
  const Shape& shape;
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  int shard = 0;
  int shards = 1;
};
using KernelFn = std::function<void(const KernelCall&)>;

struct VariantSpec {
  std::string name;
  Isa isa = Isa::kScalar;                     // the lowest level it needs
  std::map<std::string, std::string> params;  // "tile" -> "64"
  std::string help;
  KernelFn run;
  // Overrides of the kernel's tolerances for this variant (a low-precision variant of an fp32
  // kernel is judged by its own, documented bound).
  std::map<DType, Tolerance> tolerances;
};

// Inputs as float64 values (already rounded to each input's dtype); the reference fills one
// vector per output with values and one with magnitudes (the error scale per element).
using ReferenceFn = std::function<void(const Shape& shape, std::span<const std::vector<double>> inputs,
                                       std::span<std::vector<double>> outputs,
                                       std::span<std::vector<double>> magnitudes)>;

struct CostModel {
  std::function<double(const Shape&)> bytes;  // bytes that must move (inputs read, outputs written)
  std::function<double(const Shape&)> flops;  // floating-point operations (an FMA counts 2)
};

struct Partitioning {
  std::string param;  // the shape parameter split into contiguous shards ("M")
};

// A named part of a kernel for instruction-count attribution: functions whose (demangled) name
// contains `function_substring` belong to it.
struct RegionSpec {
  std::string name;
  std::string function_substring;
  // The harness's cost, not the kernel's (copying an input so that every timed call starts from
  // the same state): reported, but left out when attributing the kernel's own work.
  bool harness = false;
};

struct KernelSpec {
  std::string name;
  std::string help;
  std::vector<ShapeParam> shape_params;
  std::function<Status(const Shape&)> check_shape;  // optional constraints beyond ranges
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  ReferenceFn reference;
  CostModel cost;
  std::map<DType, Tolerance> tolerances;  // overrides of check's per-dtype defaults
  std::optional<Partitioning> partitioning;
  std::vector<RegionSpec> regions;
  std::vector<VariantSpec> variants;
  // The engine's forward calls this kernel through the variant its knob names (engine/
  // engine_kernels.h), so kernel.<name>.variant acts on the engine as well as the probes.
  bool engine_calls = false;
  // Said in the variant knob's help: what "auto" runs in the engine where that is not the best
  // variant, or, for a kernel the engine does not call, why not (its knob is probe-only).
  std::string engine_note;

  const VariantSpec* find_variant(std::string_view name) const;
  // not_found naming the variants that exist.
  Result<const VariantSpec*> lookup_variant(std::string_view name) const;
  // The best variant this machine runs (highest ISA at or below active_isa(); first wins ties).
  const VariantSpec* best_variant() const;
  // parse_shape plus ranges and check_shape.
  Result<Shape> parse_shape(std::string_view text) const;
  Shape default_shape() const;
  // Range and constraint checks for a shape built in code.
  Status validate_shape(const Shape& shape) const;
  // Names, dtypes and dims of every tensor for this shape, for messages: "x f32[64,4096]".
  std::string describe_tensors(const Shape& shape) const;
};

// For a variant's run function, whose arguments cannot fail once check_shape has passed: a
// failure is a bug in recur, reported with `what` (the kernel) and aborted on.
void must(const Status& s, std::string_view what);

// Whether this machine (at the active ISA level) can run the variant; the error says why not.
Status check_runnable(const VariantSpec& v);

// The [begin, end) range of `extent` that shard p of P owns (contiguous, sizes differ by <= 1).
std::pair<int64_t, int64_t> shard_range(int64_t extent, int shards, int p);

class KernelRegistry {
 public:
  // The built-in kernels; the first call registers them and their variant knobs.
  static KernelRegistry& global();

  // Fails on a duplicate or malformed spec (no reference, no variants, mismatched coords).
  Status add(KernelSpec spec);
  // Adds a variant to a registered kernel (tests register cheating variants this way).
  Status add_variant(std::string_view kernel, VariantSpec variant);
  const KernelSpec* find(std::string_view name) const;
  // not_found naming the kernels that exist.
  Result<const KernelSpec*> lookup(std::string_view name) const;
  std::vector<const KernelSpec*> all() const;  // sorted by name

 private:
  std::map<std::string, KernelSpec, std::less<>> specs_;
};

// Every built-in kernel spec (builtin_kernels.cc); KernelRegistry::global() registers these.
std::vector<KernelSpec> builtin_kernel_specs();

}  // namespace recur::kernels
