// The measurements of a gate's [workload.program] (spec.h, ProgramWorkload): the program runs as
// a child process once per sample, with the arm's knobs in RECUR_KNOBS, and prints its metrics as
// one JSON object on stdout.
//
// Throughput: every arm runs `warmup_runs` untimed, then `runs` samples interleaved across arms
// in alternating order (A B, B A, ...), each sample the best of `best_of` runs; medians with
// bootstrap CIs and paired ratios come from the same code as the engine's (engine_probe.h), so
// prefill_ratio(a vs b) is again the median of per-round ratios.
// Timeline: run_program_traced() runs one arm once with `<trace_flag> PATH` and checks that the
// trace was written (agent/evidence.h analyses it).
//
// The child's environment: RECUR_KNOBS (the arm's assignments over the gate's --set), and
// PYTHONPATH with recur's Python package prepended when this binary has one built beside it
// (build/python, found from /proc/self/exe), so `{python} -m recur....` imports this build.
// Not thread-safe (one measurement at a time: runs time things).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/feedback.h"
#include "core/knobs.h"
#include "core/status.h"
#include "gate/engine_probe.h"
#include "gate/spec.h"

namespace recur::gate {

struct ProgramRun {
  nlohmann::json output;  // the JSON object the program printed
  double seconds = 0;     // wall time of the whole process
};

// The argv of one run, placeholders substituted; `extra` is appended (e.g. the trace flag).
Result<std::vector<std::string>> program_argv(const GateSpec& spec, const std::vector<std::string>& extra = {});

// The environment entries a run of `config` gets: RECUR_KNOBS=... and, when found, PYTHONPATH=...
std::vector<std::string> program_environment(const Config& config);

// Where a caller that must not run arbitrary programs (the MCP server, for its child `recur`
// processes) lists the ones it allows: "prog1,prog2" compared with argv[0] after placeholders.
// Unset: any program (a spec is its author's choice, like a shell script). Set but empty: none.
inline constexpr const char* kProgramAllowEnv = "RECUR_PROGRAM_ALLOW";
Status check_program_allowed(const std::string& program);

// One run of the program for an arm; errors name the program, the arm, and say why (exit code
// with the end of stderr, time limit, no JSON object on stdout).
Result<ProgramRun> run_program(const GateSpec& spec, const NamedConfig& arm, const std::vector<std::string>& extra = {});

Result<std::vector<ThroughputResult>> measure_program_throughput(const GateSpec& spec,
                                                                 const std::vector<NamedConfig>& arms,
                                                                 const Progress& progress);

// One run with the program's trace flag, writing `trace_path` (which must exist afterwards).
Result<ProgramRun> run_program_traced(const GateSpec& spec, const NamedConfig& arm, const std::string& trace_path);

}  // namespace recur::gate
