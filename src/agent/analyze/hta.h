// `recur analyze hta`: HTA-compatible figures for PyTorch profiler (Kineto) traces, one file
// or a folder with one trace per rank. What each figure means and how HTA computes it:
// docs/analyses.md, "## hta". Per rank:
//   - comm/compute overlap %, temporal breakdown (idle, compute, non-compute, kernel span),
//     the kernel-type mix (hta_gpu_time.h);
//   - idle time per stream as host_wait / kernel_wait / other (hta_idle.h);
//   - CUDA launch statistics (hta_launch.h) and queue length per stream (hta_queue.h);
// and over all ranks HTA's kernel-type table (sum and percentage per class mix).
//
// The rank comes from distributedInfo.rank; a trace without one is rank 0, with a note. A
// folder is read one trace at a time per job (`jobs` ranks at once), and each trace is dropped
// as soon as its rows are extracted, so memory stays near `jobs` x the largest trace rather
// than the sum. HTA's last-ProfilerStep exclusion depends on the step names of all ranks
// (hta_filter.h); a rank that cannot decide alone is measured both ways and the right set is
// kept once every rank has been read. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/hta_gpu_time.h"
#include "analyze/hta_idle.h"
#include "analyze/hta_launch.h"
#include "analyze/hta_queue.h"
#include "core/status.h"
#include "trace/event_table.h"
#include "trace/trace_io.h"

namespace recur::analyze {

struct HtaOptions {
  unsigned jobs = 1;  // ranks analysed at once
  int64_t kernel_wait_threshold_ns = kHtaKernelWaitThresholdNs;
  // analyze_hta() only: before reading, reserve_heap() (hta_heap.h) for about three times the
  // JSON of the `jobs` largest traces. Process-wide: for the CLI, not for embedding.
  bool reserve_heap = false;
  trace::ReadLimits limits;  // analyze_hta() only: what the reader may take in (trace_io.h)
};

// Everything measured on one rank's rows.
struct HtaRankFigures {
  size_t events = 0;  // rows HTA keeps (after the last-step exclusion)
  HtaGpuTime gpu;
  std::vector<HtaIdleRow> idle;
  HtaLaunchStats launch;
  std::vector<HtaQueueRow> queue;
};

struct HtaRankReport {
  int64_t rank = 0;
  std::string file;
  bool rank_assumed = false;  // no distributedInfo.rank: rank 0 assumed
  bool rounded = false;       // fractional-µs timestamps were rounded
  HtaRankFigures figures;

  // HTA's percentages, rounded to 2 decimals as HTA prints them; NaN when undefined (no
  // communication kernels; no kernels at all).
  double comm_comp_overlap_pct() const;
  double idle_pct() const;
  double compute_pct() const;
  double non_compute_pct() const;
};

// One line of HTA's kernel-type table.
struct HtaKernelTypeRow {
  std::string kernel_type;  // "COMPUTATION", "COMPUTATION overlapping COMMUNICATION", ...
  int64_t sum_us = 0;
  double percentage = 0;    // of all rows' sum, rounded to 1 decimal
};

struct HtaReport {
  std::string path;
  std::vector<HtaRankReport> ranks;  // ascending rank
  bool last_step_excluded = false;
  std::vector<HtaKernelTypeRow> kernel_types;  // over all ranks, largest first
  std::vector<std::string> notes;
};

// 100 * part / whole rounded to `decimals` as numpy does; NaN when whole is 0.
double hta_percent(double part, double whole, int decimals);

// HTA's kernel-type table for these ranks.
std::vector<HtaKernelTypeRow> hta_kernel_type_table(const std::vector<HtaRankReport>& ranks);

// A trace already in memory, and the name its report and errors use.
struct HtaInput {
  std::string name;
  const trace::EventTable* table = nullptr;
};

// Analyses traces in memory (one per rank). Fails when two claim the same rank.
Result<HtaReport> analyze_hta_tables(const std::vector<HtaInput>& inputs, const HtaOptions& options = {});

// Analyses a trace file, or every *.json / *.gz trace in a folder (one per rank). Errors name
// the path; a trace that does not parse fails with the reader's error (file, byte, expected).
Result<HtaReport> analyze_hta(const std::string& path, const HtaOptions& options = {});

}  // namespace recur::analyze
