// Attribution from a timeline (evidence.h's probe ladder, for a gate whose workload is a program
// with a [workload.program.timeline]): one traced run of the candidate, then two analyses of
// that trace, each a journal experiment:
//   analyze.overlap  does the background work (e.g. the KV transfer's intervals) hide behind
//                    the foreground (e.g. MoE dispatch/combine)? share of its busy time that
//                    overlaps, and how many of its zones never do;
//   analyze.locks    who waited on which lock while which thread held it, in which zone (the
//                    GIL is traced as a lock by the Python bindings).
// A third experiment splits the same trace's time by component (analyze.time_split, findings
// only: the overlap and the locks rank).
// Components: `lock:<mutex, lower case>` for each lock waited on (share of the wait time, the
// waiters, the holders and where they held it), then `thread:<the background's thread>` when the
// background rarely overlaps the foreground. Nothing here knows an episode.
// Not thread-safe (the run times things).
#pragma once

#include <map>
#include <string>

#include "loop/evidence.h"
#include "gate/spec.h"

namespace recur::agent {

// Appends the timeline's components and findings to `ev`; `trace_dir` keeps the trace ("" = a
// temporary folder).
Result<Evidence> timeline_evidence(const gate::GateSpec& spec, const std::string& candidate, ExperimentLog& log,
                                   const std::string& trace_dir, Evidence ev);

// A program workload without a declared timeline: one traced run of the candidate (the program's
// trace flag) and, when `reference` names an arm with other knobs, one of the reference; their
// zones' self time by component (gate/time_split.h), the candidate's excess over the reference
// (or its own time), as the components. An error when the program wrote no trace.
Result<Evidence> program_time_split_evidence(const gate::GateSpec& spec, const std::string& candidate,
                                             const std::string& reference, ExperimentLog& log,
                                             const std::string& trace_dir, Evidence ev);

}  // namespace recur::agent
