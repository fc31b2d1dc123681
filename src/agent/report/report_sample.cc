#include "report/report_sample.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

struct SampleStep {
  ExperimentSpec spec;
  Feedback feedback;
  Decision decision;
  double offset_s, duration_s;  // from kSampleStart
};

Feedback make_feedback(std::string probe, int tier, double cost, Verdict v, std::string subject) {
  Feedback f;
  f.probe = std::move(probe);
  f.tier = tier;
  f.cost_s = cost;
  f.subject = std::move(subject);
  f.verdict = v;
  return f;
}

// A gate evaluation as src/gate writes it: one metric per condition term, the counters, one
// note per condition with its text in backticks.
Feedback gate_feedback(double time_us, double lo, double hi, double speedup, double slo, double shi, bool pass,
                       double cost) {
  Feedback f = make_feedback("gate", 2, cost, pass ? Verdict::kConfirmed : Verdict::kRefuted,
                             "gate:kda-decode-speed spec=episodes/gates/kda-decode-speed.toml arms=cand,ref");
  f.hypothesis = "hoisted KDA decode is at least 1.2x faster than vtile and under 45 us";
  f.add_metric("time_us(cand)", time_us, "us").ci95 = std::pair(lo, hi);
  f.add_metric("speedup(cand vs ref)", speedup).ci95 = std::pair(slo, shi);
  f.add_metric("conditions_pass", pass ? 2 : 0);
  f.add_metric("conditions_fail", pass ? 0 : 2);
  f.add_metric("conditions_inconclusive", 0);
  const char* outcome = pass ? "pass" : "fail";
  f.notes.push_back(fmt::format("gate {}: decided by condition 1", outcome));
  f.notes.push_back(fmt::format("condition 1 {}: `time_us(cand) <= 45`: [{}, {}] vs 45", outcome, lo, hi));
  f.notes.push_back(fmt::format("condition 2 {}: `speedup(cand vs ref) >= 1.2`", outcome));
  f.artifacts["spec"] = "episodes/gates/kda-decode-speed.toml";
  return f;
}

std::vector<SampleStep> sample_steps(const std::string& absolute_trace) {
  std::vector<SampleStep> s;
  Feedback g0 = gate_feedback(52.1, 50.9, 53.4, 1.04, 0.99, 1.09, false, 6.0);
  g0.artifacts["trace"] = "traces/gate0.trace.json";
  s.push_back({{"baseline: does the starting config pass the gate?", "gate", 2, {}}, g0, Decision::kNone, 0, 6});

  std::string h1 = fmt::format("the prologue is recomputed per V tile {} & \"quotes\" 'too'", kSampleScript);
  Feedback a1 = make_feedback("bench.callgrind", 0, 3.2, Verdict::kConfirmed, "kernel:kda_decode variant=vtile");
  a1.hypothesis = h1;
  a1.add_metric("instructions", 1.84e6);
  a1.attribution = {{"kernel:kda_decode/prologue", 0.46, "instructions 46% in prologue, repeated 4x (NV=4)"},
                    {"kernel:kda_decode/tiles", 0.38, "instructions in the V tiles"},
                    {std::string(kUnattributed), 0.16, "the rest"}};
  a1.attribution_is_decomposition = true;
  a1.notes.push_back("prologue < tiles && tiles > 0: <b>not bold</b>");
  a1.next.push_back("bench.kernel kda_decode variant=hoisted");
  s.push_back({{h1, "bench.callgrind", 0, {}}, a1, Decision::kNone, 6.5, 3.5});

  Feedback b2 = make_feedback("bench.kernel", 2, 1.9, Verdict::kConfirmed, "kernel:kda_decode hoisted vs vtile");
  b2.hypothesis = "hoisted is faster than vtile";
  b2.add_metric("time_ratio", 0.79).ci95 = std::pair(0.77, 0.81);
  b2.artifacts["trace"] = absolute_trace;
  s.push_back({{"hoisting the prologue makes kda_decode faster", "bench.kernel", 2,
                {{"kernel.kda_decode.variant", "hoisted"}}},
               b2, Decision::kKeep, 10.5, 2.1});

  Feedback b3 = make_feedback("bench.kernel", 2, 2.4, Verdict::kRefuted, "engine threads 4 vs 2");
  b3.hypothesis = "4 threads beat 2 on this VM";
  b3.add_metric("time_ratio", 1.12).ci95 = std::pair(1.05, 1.2);
  b3.notes.push_back("2 vCPUs: oversubscribed");
  s.push_back({{"more threads help", "bench.kernel", 2, {{"engine.threads", "4"}}}, b3, Decision::kRevert, 13, 2.5});

  s.push_back({{"gate after hoisting", "gate", 2, {}}, gate_feedback(43.0, 42.1, 44.2, 1.18, 1.13, 1.24, false, 5.0),
               Decision::kNone, 16, 5});

  Feedback c5 = make_feedback("check.engine_ops", 3, 3.9, Verdict::kConfirmed, "engine ops with gemm avx2");
  c5.hypothesis = "the avx2 gemm keeps the engine's outputs";
  c5.add_metric("max_rel_err", 3e-7);
  c5.artifacts["report"] = "kda-sample/missing-report.html";
  s.push_back({{"avx2 gemm is safe and faster", "check.engine_ops", 3, {{"kernel.gemm.variant", "avx2"}}}, c5,
               Decision::kKeep, 21.5, 4});

  s.push_back({{"gate with avx2 gemm", "gate", 3, {}}, gate_feedback(40.2, 39.8, 40.7, 1.31, 1.27, 1.35, true, 5.2),
               Decision::kNone, 26, 5.5});
  return s;
}

Status exec_sql(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string what = err ? err : "unknown error";
    sqlite3_free(err);
    return internal_error("sample journal: {}: {}", sql, what);
  }
  return ok_status();
}

// Spreads the recorded times out (the journal stamps them with the clock, milliseconds apart here).
Status set_sample_times(const std::string& path, int64_t run_id, const std::vector<SampleStep>& steps) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return io_error("sample journal {}: cannot open", path);
  }
  std::string sql = fmt::format("BEGIN; UPDATE runs SET created_at = {:.3f}, ended_at = {:.3f} WHERE id = {};",
                                kSampleStart, kSampleStart + 32, run_id);
  for (size_t i = 0; i < steps.size(); ++i) {
    double t = kSampleStart + steps[i].offset_s;
    sql += fmt::format("UPDATE experiments SET planned_at = {:.3f}, started_at = {:.3f}, ended_at = {:.3f} "
                       "WHERE run_id = {} AND step = {};",
                       t, t + 0.1, t + steps[i].duration_s, run_id, i);
  }
  Status st = exec_sql(db, sql + "COMMIT;");
  sqlite3_close(db);
  return st;
}

Status write_text(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return io_error("sample: cannot write {}", path.string());
  return ok_status();
}

}  // namespace

Result<SampleRun> write_sample_run(const std::string& dir) {
  SampleRun out;
  out.journal_path = (fs::path(dir) / "journal.db").string();
  out.absolute_trace = fs::absolute(fs::path(dir) / "abs" / "step2 trace.json").string();
  const std::string trace = R"({"traceEvents": []})";
  RECUR_RETURN_IF_ERROR(write_text(fs::path(dir) / "traces" / "gate0.trace.json", trace));
  RECUR_RETURN_IF_ERROR(write_text(out.absolute_trace, trace));

  std::vector<SampleStep> steps = sample_steps(out.absolute_trace);
  {
    RECUR_ASSIGN_OR_RETURN(auto j, Journal::open(out.journal_path, {.synchronous_full = false}));
    RECUR_ASSIGN_OR_RETURN(RunRecord run, j->begin_run(kSampleRunName, "episodes/kda-replayssm.toml",
                                                       {{"kernel.kda_decode.variant", "vtile"},
                                                        {"engine.threads", "2"},
                                                        {"engine.tp", "1"}}));
    for (size_t i = 0; i < steps.size(); ++i) {
      RECUR_RETURN_IF_ERROR(j->plan(run.id, int64_t(i), steps[i].spec));
      RECUR_RETURN_IF_ERROR(j->start(run.id, int64_t(i)));
      RECUR_RETURN_IF_ERROR(j->finish(run.id, int64_t(i), steps[i].feedback, steps[i].decision));
    }
    RECUR_RETURN_IF_ERROR(j->end_run(run.id, "done", "gate pass after 7 experiments"));
    RECUR_RETURN_IF_ERROR(set_sample_times(out.journal_path, run.id, steps));
  }
  return out;
}

}  // namespace recur::agent
