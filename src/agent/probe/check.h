// check: is this variant's output the same? One tier-1 probe that compares a kernel variant
// against its float64 reference, against another variant, and against itself partitioned into
// P shards, over several seeds and input distributions, and localizes the worst element to the
// kernel's own coordinates (row, col, ...), its tile and its shard.
//
// Defences against variants that "win" by cheating (docs/probes.md), each on by default:
//   sentinels        outputs are pre-filled with a NaN pattern; any left is an unwritten element
//   checksum_inputs  inputs are checksummed (and copied) before and after; a change is mutation
//   fresh_inputs     every trial draws new inputs, so stale or cached outputs mismatch (and are
//                    recognised as matching the previous trial's expected output)
//   ghost_replay     a no-op variant is run through the same harness first and must fail; if it
//                    passes, the check cannot see the kernel and the verdict is `failed`
//   roofline_flag    the variant is timed; a call faster than the roofline's speed of light means
//                    skipped work
// The defences can be switched off only so tests can show each one is what catches its cheat.
// check_variant() runs on the calling thread; it is thread-safe for distinct variants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/feedback.h"
#include "core/status.h"
#include "kernels/registry.h"
#include "probe/bench_roofline.h"
#include "probe/check_inputs.h"

namespace recur::probe {

// Defaults per dtype (docs/probes.md): |got - want| <= atol + rtol * magnitude.
kernels::Tolerance default_tolerance(DType t);
// The spec's override for t, else the default.
kernels::Tolerance tolerance_for(const kernels::KernelSpec& spec, DType t);

struct CheckOptions {
  std::vector<uint64_t> seeds = {1, 2, 3};
  std::vector<Distribution> distributions = all_distributions();
  std::vector<int> partitions;                   // shard counts to compare, e.g. {1, 2, 4, 8}
  const kernels::VariantSpec* vs = nullptr;      // also compare against this variant
  std::optional<kernels::Tolerance> tolerance;   // overrides every output's tolerance
  bool sentinels = true;
  bool checksum_inputs = true;
  bool fresh_inputs = true;
  bool ghost_replay = true;
  bool roofline_flag = true;
  std::optional<MachinePeaks> peaks;             // default: machine_peaks()
  int tiles_reported = 4;
};

struct ElementLocation {
  int64_t flat = -1;
  std::vector<int64_t> index;  // in the tensor's coordinates
  std::vector<int64_t> tile;   // index / tile size per dim
  int shard = 0;
  int shards = 1;
};
// "y[row 17, col 300] tile (2, 1) shard 1/4"
std::string describe_location(const kernels::TensorSpec& t, const ElementLocation& loc);

struct CompareStats {
  int64_t count = 0;
  int64_t out_of_tolerance = 0;  // includes unwritten and non-finite elements
  int64_t unwritten = 0;         // still holding the sentinel
  int64_t nonfinite = 0;         // NaN or inf where the expected value is finite
  double max_abs = 0;            // over finite, written elements
  double max_rel = 0;            // |err| / magnitude
  double nmse = 0;               // sum err^2 / sum want^2
  int64_t max_ulp = 0;
  double worst_ratio = 0;        // max |err| / allowed (inf for unwritten or non-finite)
  ElementLocation worst;
  double worst_got = 0, worst_want = 0;
  ElementLocation first_unwritten;
  double frac_out_of_tolerance() const { return count ? double(out_of_tolerance) / double(count) : 0; }
};

struct ShardRow {
  int shard = 0;
  int64_t begin = 0, end = 0;  // range of the partitioned dim
  double max_abs = 0;
  int64_t out_of_tolerance = 0;
  int64_t unwritten = 0;
};

struct TileRow {
  std::vector<int64_t> tile;
  int shard = 0;
  double max_abs = 0;
  double worst_ratio = 0;
  int64_t out_of_tolerance = 0;
};

struct Comparison {
  std::string against;  // "reference", "unpartitioned", "variant <name>"
  uint64_t seed = 0;
  Distribution distribution = Distribution::kUniform;
  int shards = 1;
  size_t output = 0;
  CompareStats stats;
  std::string where;                  // describe_location() of the worst element
  std::vector<ShardRow> shard_table;  // one row per shard (one row when unpartitioned)
  std::vector<TileRow> worst_tiles;   // the tiles with the largest error ratio, worst first
  bool stale = false;                 // the output matches the previous trial's expected values
  bool pass = false;
};

struct CheckReport {
  std::string kernel;
  std::string variant;
  kernels::Shape shape;
  std::vector<Comparison> comparisons;
  std::vector<std::string> problems;  // mutations, partial writes, stale outputs, ghost, roofline
  std::vector<std::string> tolerances;  // "y f32: atol 1.2e-38, rtol 1e-05"
  bool ghost_rejected = true;
  std::string ghost_evidence;
  std::optional<RooflineReport> roofline;
  double time_per_call_s = 0;
  bool pass = false;
  double cost_s = 0;
};

// Fails (an Error, not a report) only when the check cannot run: a variant this machine cannot
// execute, a kernel without partitioning given --partitions, dtypes the harness cannot handle.
Result<CheckReport> check_variant(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant,
                                  const kernels::Shape& shape, const CheckOptions& options);

// The Feedback record: probe "check.kernel", tier 1; verdict confirmed when the variant
// matches everywhere and no defence fired, refuted when it does not, failed when the ghost
// replay passed (the check itself is not trustworthy).
Feedback check_feedback(const CheckReport& report, const CheckOptions& options);

}  // namespace recur::probe
