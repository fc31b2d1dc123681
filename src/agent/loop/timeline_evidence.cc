#include "loop/timeline_evidence.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analyze/load_trace.h"
#include "analyze/locks.h"
#include "analyze/overlap.h"
#include "analyze/trace_labels.h"
#include "gate/program_probe.h"
#include "gate/time_split.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;

// The '/'-separated segments every path shares from the start: "a/b/c" and "a/b/d" give "a/b".
std::string common_zone_prefix(const std::vector<std::string>& paths) {
  auto segments = [](const std::string& p) {
    std::vector<std::string> out;
    for (size_t at = 0; at <= p.size();) {
      const size_t slash = std::min(p.find('/', at), p.size());
      out.push_back(p.substr(at, slash - at));
      at = slash + 1;
    }
    return out;
  };
  if (paths.empty()) return "";
  std::vector<std::string> common = segments(paths.front());
  for (const std::string& p : paths) {
    const std::vector<std::string> s = segments(p);
    size_t n = 0;
    while (n < common.size() && n < s.size() && common[n] == s[n]) ++n;
    common.resize(n);
  }
  return fmt::format("{}", fmt::join(common, "/"));
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The components of a lock analysis: one per mutex waited on.
void add_lock_components(const analyze::LocksResult& locks, Evidence& ev) {
  for (const analyze::MutexLocks& m : locks.mutexes) {
    if (m.waits == 0 || m.wait_ns <= 0) continue;
    std::vector<std::string> holder_zones, waiters, holders;
    for (const analyze::LockRow& r : m.rows) {
      if (r.holder == "unknown") continue;
      holder_zones.push_back(r.holder_zone);
      if (std::find(waiters.begin(), waiters.end(), r.waiter) == waiters.end()) waiters.push_back(r.waiter);
      if (std::find(holders.begin(), holders.end(), r.holder) == holders.end()) holders.push_back(r.holder);
    }
    const std::string where = common_zone_prefix(holder_zones);
    std::string text = fmt::format("{} waited {} in {} wait{} on {} (max {}), held by {}{}", fmt::join(waiters, ", "),
                                   analyze::format_ns(m.wait_ns), m.waits, m.waits == 1 ? "" : "s", m.mutex,
                                   analyze::format_ns(m.wait_max_ns),
                                   holders.empty() ? "an unknown thread" : fmt::format("{}", fmt::join(holders, ", ")),
                                   where.empty() ? "" : " inside " + where);
    if (!m.rows.empty() && m.rows.front().holder != "unknown")
      text += fmt::format(" (longest: {} {} while the holder was in {})", m.rows.front().count > 1 ? "waits totalling" : "a wait of",
                          analyze::format_ns(m.rows.front().total_ns), m.rows.front().holder_zone);
    ev.components.push_back({"lock:" + lower(m.mutex), locks.wait_ns > 0 ? double(m.wait_ns) / double(locks.wait_ns) : 0,
                             text});
    ev.findings.push_back(text);
  }
}

// The reader's recoveries (a zone closed at the track's end, a replaced byte) go first in the
// record: a guessed duration must not pass for a measured one.
void carry_recovery_notes(const analyze::LoadedTrace& t, Feedback& f) {
  f.notes.insert(f.notes.begin(), t.notes.begin(), t.notes.end());
}

// The folder a timeline probe writes its trace to ("" = a temporary one), created.
Result<fs::path> trace_folder(const std::string& trace_dir) {
  std::error_code ec;
  const fs::path dir =
      trace_dir.empty() ? fs::temp_directory_path() / fmt::format("recur-timeline-{}", getpid()) : fs::path(trace_dir);
  fs::create_directories(dir, ec);
  if (ec) return io_error("timeline evidence: cannot create {}: {}", dir.string(), ec.message());
  return dir;
}

// The candidate's time by component in a program's trace (analyze.time_split over its zones, as
// the engine's are split), one journal experiment: against the reference arm's traced run when
// `reference` is given (what got slower), else the candidate's own time. `run` runs the
// candidate's program first; a trace already written by another experiment is reused.
Result<LoggedExperiment> program_time_split(const gate::GateSpec& spec, const gate::NamedConfig& candidate,
                                            const std::optional<gate::NamedConfig>& reference,
                                            const std::string& trace_path, bool run, ExperimentLog& log,
                                            const std::string& condition) {
  return log.run(
      {.hypothesis = reference ? fmt::format("in traced runs of {} and {}, the components where {} spends more time "
                                             "explain `{}`",
                                             candidate.name, reference->name, candidate.name, condition)
                               : fmt::format("in a traced run of {}, the components where the program spends its time "
                                             "bound `{}`",
                                             candidate.name, condition),
       .probe = "analyze.time_split", .tier = run || reference ? 3 : 0, .config_diff = {}},
      [&]() -> Result<Feedback> {
        double seconds = 0;
        if (run) {
          RECUR_ASSIGN_OR_RETURN(gate::ProgramRun r, gate::run_program_traced(spec, candidate, trace_path));
          seconds += r.seconds;
        }
        RECUR_ASSIGN_OR_RETURN(analyze::LoadedTrace t, analyze::load_trace(trace_path));
        const gate::TimeSplit a = gate::split_trace(*t.table);
        std::optional<gate::TimeSplit> b;
        std::string reference_trace;
        if (reference) {
          reference_trace = fs::path(trace_path).replace_extension("").replace_extension("").string() + "-" +
                            reference->name + ".json.gz";
          RECUR_ASSIGN_OR_RETURN(gate::ProgramRun r, gate::run_program_traced(spec, *reference, reference_trace));
          seconds += r.seconds;
          RECUR_ASSIGN_OR_RETURN(analyze::LoadedTrace rt, analyze::load_trace(reference_trace));
          b = gate::split_trace(*rt.table);
        }
        Feedback f = gate::time_split_feedback(
            a, candidate.name, b ? &*b : nullptr, reference ? reference->name : "",
            reference ? fmt::format("program time by component, arm {} against {}", candidate.name, reference->name)
                      : fmt::format("program time by component, arm {}", candidate.name));
        f.hypothesis = fmt::format("the program's time under {} is split by component", candidate.name);
        carry_recovery_notes(t, f);
        f.cost_s = seconds;
        f.artifacts["trace"] = trace_path;
        if (reference) f.artifacts["reference_trace"] = reference_trace;
        return f;
      },
      [](const Feedback&) { return Decision::kNone; });
}

void add_split_findings(const Feedback& split, Evidence& ev, bool as_components) {
  for (const Attribution& a : split.attribution) {
    if (a.component == kUnattributed || a.share <= 0) continue;
    if (as_components) ev.components.push_back(a);
    ev.findings.push_back(fmt::format("{} takes {:.0f}% of the program's traced {} ({})", a.component, 100 * a.share,
                                      a.evidence.find(" against ") != std::string::npos ? "excess time" : "time",
                                      a.evidence));
  }
}

}  // namespace

Result<Evidence> program_time_split_evidence(const gate::GateSpec& spec, const std::string& candidate,
                                             const std::string& reference, ExperimentLog& log,
                                             const std::string& trace_dir, Evidence ev) {
  const gate::Arm* arm = spec.find_arm(candidate);
  if (arm == nullptr) return not_found("gate {}: no arm '{}'", spec.name, candidate);
  RECUR_ASSIGN_OR_RETURN(Config config, gate::arm_config(spec, *arm, Config()));
  std::optional<gate::NamedConfig> ref;
  if (const gate::Arm* r = reference.empty() ? nullptr : spec.find_arm(reference)) {
    RECUR_ASSIGN_OR_RETURN(Config rc, gate::arm_config(spec, *r, Config()));
    if (rc.overrides() != config.overrides()) ref = gate::NamedConfig{reference, std::move(rc)};
  }
  RECUR_ASSIGN_OR_RETURN(fs::path dir, trace_folder(trace_dir));
  const std::string trace_path = (dir / fmt::format("{}-{}-step{}.json.gz", spec.name, candidate, log.steps())).string();
  RECUR_ASSIGN_OR_RETURN(LoggedExperiment split, program_time_split(spec, {candidate, config}, ref, trace_path, true,
                                                                    log, ev.condition));
  if (split.feedback.verdict == Verdict::kFailed)
    return make_error(ErrorCode::kFailedPrecondition, "{}",
                      split.feedback.notes.empty() ? "the traced run failed" : split.feedback.notes.front());
  add_split_findings(split.feedback, ev, true);
  return ev;
}

Result<Evidence> timeline_evidence(const gate::GateSpec& spec, const std::string& candidate, ExperimentLog& log,
                                   const std::string& trace_dir, Evidence ev) {
  const gate::ProgramWorkload& w = *spec.program;
  const gate::Arm* arm = spec.find_arm(candidate);
  if (arm == nullptr) return not_found("gate {}: no arm '{}'", spec.name, candidate);
  RECUR_ASSIGN_OR_RETURN(Config config, gate::arm_config(spec, *arm, Config()));
  RECUR_ASSIGN_OR_RETURN(analyze::Selector background, analyze::Selector::parse(w.background));
  RECUR_ASSIGN_OR_RETURN(analyze::Selector foreground, analyze::Selector::parse(w.foreground));
  RECUR_ASSIGN_OR_RETURN(fs::path dir, trace_folder(trace_dir));
  // Named by the journal step of the overlap experiment: unique in the run, also after a resume
  // (whose log counts its new experiments from 0 again).
  const std::string trace_path = (dir / fmt::format("{}-{}-step{}.json.gz", spec.name, candidate, log.steps())).string();

  // 1. One traced run, and the overlap of background by foreground.
  std::string used_trace;
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment overlap,
      log.run({.hypothesis = fmt::format("in a traced run of {}, '{}' hides behind '{}'; if it never does, the "
                                         "work is serialized and explains `{}`",
                                         candidate, w.background, w.foreground, ev.condition),
               .probe = "analyze.overlap", .tier = 3, .config_diff = {}},
              [&]() -> Result<Feedback> {
                RECUR_ASSIGN_OR_RETURN(gate::ProgramRun run,
                                       gate::run_program_traced(spec, {candidate, config}, trace_path));
                RECUR_ASSIGN_OR_RETURN(analyze::LoadedTrace t, analyze::load_trace(trace_path));
                analyze::OverlapOptions o{.a = background, .b = foreground};
                const analyze::OverlapResult r = analyze::analyze_overlap(*t.tree, o);
                Feedback f = analyze::overlap_feedback(*t.tree, o, r, trace_path);
                carry_recovery_notes(t, f);
                f.cost_s = run.seconds;
                f.tier = 3;
                f.artifacts["trace"] = trace_path;
                analyze::ZoneMatcher m(background, *t.tree);
                if (const std::vector<uint32_t> zones = m.select(); !zones.empty())
                  f.notes.push_back("background thread: " +
                                    analyze::thread_text(t.tree->table(), t.tree->zone(zones.front()).track));
                return f;
              },
              [](const Feedback&) { return Decision::kNone; }));
  used_trace = overlap.feedback.artifacts.count("trace") ? overlap.feedback.artifacts.at("trace") : trace_path;
  for (const std::string& n : overlap.feedback.notes)
    if (n.find(": recovered: ") != std::string::npos) ev.findings.push_back(n);
  const Metric* share = overlap.feedback.find_metric("overlap_share");
  const Metric* never = overlap.feedback.find_metric("never_overlapped_zones");
  const Metric* busy = overlap.feedback.find_metric("a_busy_us");
  std::string overlap_line;
  if (share != nullptr && busy != nullptr && busy->value > 0)
    overlap_line = fmt::format("'{}' ({:.1f} ms busy) overlaps '{}' for {:.1f}% of its time; {:.0f} of its zones never "
                               "overlap it",
                               w.background, busy->value / 1000, w.foreground, 100 * share->value,
                               never != nullptr ? never->value : 0);
  else
    overlap_line = fmt::format("'{}' selected no zone in the candidate's trace", w.background);

  // 2. The locks in the same trace: who kept the background from running.
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment locks,
      log.run({.hypothesis = fmt::format("in the same trace, a lock held across the foreground keeps '{}' waiting",
                                         w.background),
               .probe = "analyze.locks", .tier = 0, .config_diff = {}},
              [&]() -> Result<Feedback> {
                RECUR_ASSIGN_OR_RETURN(analyze::LoadedTrace t, analyze::load_trace(used_trace));
                const analyze::LocksResult r = analyze::analyze_locks(*t.tree, {});
                Feedback f = analyze::locks_feedback({}, r, used_trace);
                carry_recovery_notes(t, f);
                f.artifacts["trace"] = used_trace;
                Evidence lock_ev;
                add_lock_components(r, lock_ev);
                f.attribution.clear();  // the per-mutex components, as the agent reads them
                f.attribution_is_decomposition = false;
                for (const Attribution& a : lock_ev.components) f.attribution.push_back(a);
                return f;
              },
              [](const Feedback&) { return Decision::kNone; }));
  for (const Attribution& a : locks.feedback.attribution) {
    ev.components.push_back(a);
    ev.findings.push_back(fmt::format("{}: {}", a.component, a.evidence));
  }
  ev.findings.push_back(overlap_line);
  // 3. Where the candidate's time goes in the same trace: context for the proposer (the overlap
  // and the locks rank the components; a split of the whole is not the gap).
  RECUR_ASSIGN_OR_RETURN(LoggedExperiment split, program_time_split(spec, {candidate, config}, std::nullopt, used_trace,
                                                                    false, log, ev.condition));
  add_split_findings(split.feedback, ev, false);
  // The background's own thread, when it rarely overlaps: the knobs of that thread come next.
  const std::string kThreadNote = "background thread: ";
  for (const std::string& n : overlap.feedback.notes)
    if (n.starts_with(kThreadNote) && share != nullptr && share->value < 0.5)
      ev.components.push_back({"thread:" + n.substr(kThreadNote.size()), 1.0 - share->value, overlap_line});
  return ev;
}

}  // namespace recur::agent
