#include "journal/journal.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "journal/journal_schema.h"
#include "journal/run_name.h"
#include "journal/sqlite_db.h"

namespace recur::agent {

std::string_view experiment_state_name(ExperimentState s) {
  switch (s) {
    case ExperimentState::kPlanned: return "planned";
    case ExperimentState::kRunning: return "running";
    case ExperimentState::kDone: return "done";
  }
  return "?";
}

std::string_view decision_name(Decision d) {
  switch (d) {
    case Decision::kKeep: return "keep";
    case Decision::kRevert: return "revert";
    case Decision::kNone: return "none";
  }
  return "?";
}

std::optional<Decision> parse_decision(std::string_view name) {
  for (Decision d : {Decision::kKeep, Decision::kRevert, Decision::kNone})
    if (decision_name(d) == name) return d;
  return std::nullopt;
}

namespace {

constexpr std::string_view kExperimentColumns =
    "run_id, step, state, attempts, hypothesis, probe, tier, config_diff, feedback, verdict, decision, cost_s, "
    "planned_at, started_at, ended_at";
constexpr std::string_view kRunColumns = "id, name, episode, base_config, state, outcome, created_at, ended_at";

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string diff_to_json(const KnobDiff& d) { return nlohmann::json(d).dump(); }

Result<KnobDiff> diff_from_json(const std::string& text, const SqliteDb& db, std::string_view step) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return parse_error("journal {}: {}: config is not a JSON object: {}", db.path(), step, text);
  KnobDiff d;
  for (auto& [k, v] : j.items()) {
    if (!v.is_string()) return parse_error("journal {}: {}: config value of '{}' is not a string", db.path(), step, k);
    d[k] = v.get<std::string>();
  }
  return d;
}

std::optional<ExperimentState> parse_state(std::string_view s) {
  for (ExperimentState st : {ExperimentState::kPlanned, ExperimentState::kRunning, ExperimentState::kDone})
    if (experiment_state_name(st) == s) return st;
  return std::nullopt;
}

Result<ExperimentRecord> read_experiment(const Statement& s, const SqliteDb& db, std::string_view step) {
  ExperimentRecord r;
  r.run_id = s.column_int(0);
  r.step = s.column_int(1);
  auto state = parse_state(s.column_text(2));
  if (!state) return parse_error("journal {}: {}: unknown state '{}'", db.path(), step, s.column_text(2));
  r.state = *state;
  r.attempts = int(s.column_int(3));
  r.spec.hypothesis = s.column_text(4);
  r.spec.probe = s.column_text(5);
  r.spec.tier = int(s.column_int(6));
  RECUR_ASSIGN_OR_RETURN(r.spec.config_diff, diff_from_json(s.column_text(7), db, step));
  if (!s.column_is_null(8)) {
    auto f = feedback_from_json_text(s.column_text(8));
    if (!f) return parse_error("journal {}: {}: run {} step {}: stored Feedback: {}", db.path(), step, r.run_id, r.step,
                               f.error().message());
    r.feedback = std::move(*f);
  }
  if (!s.column_is_null(9)) r.verdict = parse_verdict(s.column_text(9));
  if (!s.column_is_null(10)) r.decision = parse_decision(s.column_text(10));
  r.cost_s = s.column_double(11);
  r.planned_at = s.column_double(12);
  r.started_at = s.column_optional_double(13);
  r.ended_at = s.column_optional_double(14);
  return r;
}

Result<RunRecord> read_run(const Statement& s, const SqliteDb& db, std::string_view step) {
  RunRecord r;
  r.id = s.column_int(0);
  r.name = s.column_text(1);
  r.episode = s.column_text(2);
  RECUR_ASSIGN_OR_RETURN(r.base_config, diff_from_json(s.column_text(3), db, step));
  r.state = s.column_text(4);
  r.outcome = s.column_text(5);
  r.created_at = s.column_double(6);
  r.ended_at = s.column_optional_double(7);
  return r;
}

std::string key(int64_t run, int64_t step) { return fmt::format("(run {}, step {})", run, step); }

bool same_spec(const ExperimentSpec& a, const ExperimentSpec& b) {
  return a.hypothesis == b.hypothesis && a.probe == b.probe && a.tier == b.tier && a.config_diff == b.config_diff;
}

}  // namespace

Journal::Journal(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}
Journal::~Journal() = default;
const std::string& Journal::path() const { return db_->path(); }

Result<std::unique_ptr<Journal>> Journal::open(const std::string& path, const JournalOptions& options) {
  RECUR_ASSIGN_OR_RETURN(auto db, SqliteDb::open(path, options.create, options.busy_timeout_ms, options.read_only));
  if (options.read_only) RECUR_RETURN_IF_ERROR(check_journal_schema(*db));
  else RECUR_RETURN_IF_ERROR(prepare_journal_db(*db, options.synchronous_full));
  return std::unique_ptr<Journal>(new Journal(std::move(db)));
}

Result<RunRecord> Journal::begin_run(std::string_view name, std::string_view episode, const KnobDiff& base_config) {
  RECUR_RETURN_IF_ERROR(check_run_name(name, fmt::format("journal {}: begin run", path())));
  const std::string step = fmt::format("begin run '{}'", name);
  RECUR_ASSIGN_OR_RETURN(Transaction tx, Transaction::begin(*db_, step));
  RECUR_ASSIGN_OR_RETURN(Statement ins, db_->prepare("INSERT INTO runs (name, episode, base_config, created_at) "
                                                     "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO NOTHING",
                                                     step));
  ins.bind(1, name).bind(2, episode).bind(3, diff_to_json(base_config)).bind(4, unix_now());
  RECUR_RETURN_IF_ERROR(ins.run());
  RECUR_RETURN_IF_ERROR(tx.commit());
  RECUR_ASSIGN_OR_RETURN(RunRecord r, find_run(name));
  if (r.episode != episode)
    return make_error(ErrorCode::kFailedPrecondition, "journal {}: {}: run '{}' exists for episode '{}', not '{}'", path(),
                      step, name, r.episode, episode);
  return r;
}

Result<RunRecord> Journal::find_run(std::string_view name_or_id) const {
  const std::string step = fmt::format("find run '{}'", name_or_id);
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare(fmt::format("SELECT {} FROM runs WHERE name = ?1 OR "
                                                               "(?2 >= 0 AND id = ?2) ORDER BY name = ?1 DESC LIMIT 1",
                                                               kRunColumns),
                                                   step));
  int64_t id = -1;
  auto [p, ec] = std::from_chars(name_or_id.data(), name_or_id.data() + name_or_id.size(), id);
  if (ec != std::errc() || p != name_or_id.data() + name_or_id.size()) id = -1;
  s.bind(1, name_or_id).bind(2, id);
  RECUR_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return not_found("journal {}: no run '{}' (`recur journal show --list` lists them)", path(), name_or_id);
  return read_run(s, *db_, step);
}

Result<std::vector<RunRecord>> Journal::runs() const {
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare(fmt::format("SELECT {} FROM runs ORDER BY id", kRunColumns), "list runs"));
  std::vector<RunRecord> out;
  while (true) {
    RECUR_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    RECUR_ASSIGN_OR_RETURN(RunRecord r, read_run(s, *db_, "list runs"));
    out.push_back(std::move(r));
  }
  return out;
}

Status Journal::end_run(int64_t run, std::string_view state, std::string_view outcome) {
  const std::string step = fmt::format("end run {}", run);
  if (state != "done" && state != "failed")
    return invalid_argument("journal {}: {}: state '{}' is not done or failed", path(), step, state);
  RECUR_ASSIGN_OR_RETURN(Transaction tx, Transaction::begin(*db_, step));
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare("UPDATE runs SET state = ?2, outcome = ?3, ended_at = ?4 WHERE id = ?1", step));
  s.bind(1, run).bind(2, state).bind(3, outcome).bind(4, unix_now());
  RECUR_RETURN_IF_ERROR(s.run());
  RECUR_ASSIGN_OR_RETURN(std::string changed, db_->query_text("SELECT changes()", step));
  if (changed == "0") return not_found("journal {}: {}: no such run", path(), step);
  return tx.commit();
}

Result<ExperimentRecord> Journal::experiment(int64_t run, int64_t step_no) const {
  const std::string step = fmt::format("read experiment {}", key(run, step_no));
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare(fmt::format("SELECT {} FROM experiments WHERE run_id = ?1 AND step = ?2",
                                                               kExperimentColumns),
                                                   step));
  s.bind(1, run).bind(2, step_no);
  RECUR_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return not_found("journal {}: no experiment {}", path(), key(run, step_no));
  return read_experiment(s, *db_, step);
}

Result<std::vector<ExperimentRecord>> Journal::experiments(int64_t run) const {
  const std::string step = fmt::format("list experiments of run {}", run);
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare(fmt::format("SELECT {} FROM experiments WHERE run_id = ?1 ORDER BY step",
                                                               kExperimentColumns),
                                                   step));
  s.bind(1, run);
  std::vector<ExperimentRecord> out;
  while (true) {
    RECUR_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    RECUR_ASSIGN_OR_RETURN(ExperimentRecord r, read_experiment(s, *db_, step));
    out.push_back(std::move(r));
  }
  return out;
}

Result<ExperimentRecord> Journal::plan(int64_t run, int64_t step_no, const ExperimentSpec& spec) {
  const std::string step = fmt::format("plan experiment {}", key(run, step_no));
  if (step_no < 0) return invalid_argument("journal {}: {}: steps start at 0", path(), step);
  if (spec.tier < 0 || spec.tier > 4) return invalid_argument("journal {}: {}: tier {} is not in 0..4", path(), step, spec.tier);
  {
    RECUR_ASSIGN_OR_RETURN(Transaction tx, Transaction::begin(*db_, step));
    RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare("INSERT INTO experiments (run_id, step, state, hypothesis, probe, "
                                                     "tier, config_diff, planned_at) VALUES (?1, ?2, 'planned', ?3, ?4, "
                                                     "?5, ?6, ?7) ON CONFLICT (run_id, step) DO NOTHING",
                                                     step));
    s.bind(1, run).bind(2, step_no).bind(3, spec.hypothesis).bind(4, spec.probe).bind(5, int64_t(spec.tier));
    s.bind(6, diff_to_json(spec.config_diff)).bind(7, unix_now());
    RECUR_RETURN_IF_ERROR(s.run());
    RECUR_RETURN_IF_ERROR(tx.commit());
  }
  RECUR_ASSIGN_OR_RETURN(ExperimentRecord r, experiment(run, step_no));
  if (!same_spec(r.spec, spec))
    return make_error(ErrorCode::kFailedPrecondition,
                      "journal {}: {}: step {} is already recorded with another experiment (hypothesis '{}', probe {}); "
                      "a resumed run plans the same experiment at a recorded step, new ones from resume_plan's next_step",
                      path(), step, step_no, r.spec.hypothesis, r.spec.probe);
  return r;
}

Result<ExperimentRecord> Journal::start(int64_t run, int64_t step_no) {
  const std::string step = fmt::format("start experiment {}", key(run, step_no));
  {
    RECUR_ASSIGN_OR_RETURN(Transaction tx, Transaction::begin(*db_, step));
    RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare("UPDATE experiments SET state = 'running', attempts = attempts + 1, "
                                                     "started_at = ?3 WHERE run_id = ?1 AND step = ?2 AND state != 'done'",
                                                     step));
    s.bind(1, run).bind(2, step_no).bind(3, unix_now());
    RECUR_RETURN_IF_ERROR(s.run());
    RECUR_ASSIGN_OR_RETURN(std::string changed, db_->query_text("SELECT changes()", step));
    if (changed == "0") {
      RECUR_ASSIGN_OR_RETURN(ExperimentRecord r, experiment(run, step_no));  // not_found when missing
      return make_error(ErrorCode::kFailedPrecondition, "journal {}: {}: the experiment is {}, not planned or running",
                        path(), step, experiment_state_name(r.state));
    }
    RECUR_RETURN_IF_ERROR(tx.commit());
  }
  return experiment(run, step_no);
}

Result<ExperimentRecord> Journal::finish(int64_t run, int64_t step_no, const Feedback& feedback, Decision decision) {
  const std::string step = fmt::format("finish experiment {}", key(run, step_no));
  if (auto v = validate_feedback(feedback); !v)
    return invalid_argument("journal {}: {}: invalid Feedback: {}", path(), step, v.error().message());
  {
    RECUR_ASSIGN_OR_RETURN(Transaction tx, Transaction::begin(*db_, step));
    RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare("UPDATE experiments SET state = 'done', feedback = ?3, verdict = ?4, "
                                                     "decision = ?5, cost_s = ?6, ended_at = ?7 WHERE run_id = ?1 AND "
                                                     "step = ?2 AND state = 'running'",
                                                     step));
    s.bind(1, run).bind(2, step_no).bind(3, feedback_to_json(feedback).dump());
    s.bind(4, verdict_name(feedback.verdict)).bind(5, decision_name(decision)).bind(6, feedback.cost_s).bind(7, unix_now());
    RECUR_RETURN_IF_ERROR(s.run());
    RECUR_ASSIGN_OR_RETURN(std::string changed, db_->query_text("SELECT changes()", step));
    if (changed == "0") {
      RECUR_ASSIGN_OR_RETURN(ExperimentRecord r, experiment(run, step_no));
      return make_error(ErrorCode::kFailedPrecondition, "journal {}: {}: the experiment is {}, not running{}", path(),
                        step, experiment_state_name(r.state),
                        r.state == ExperimentState::kDone ? " (a finished experiment is never overwritten)" : "");
    }
    RECUR_RETURN_IF_ERROR(tx.commit());
  }
  return experiment(run, step_no);
}

Result<ExperimentRecord> Journal::abandon(int64_t run, int64_t step_no, std::string_view why) {
  RECUR_ASSIGN_OR_RETURN(ExperimentRecord r, experiment(run, step_no));
  Feedback f;
  f.probe = r.spec.probe.empty() ? "journal" : r.spec.probe;
  f.tier = r.spec.tier;
  f.subject = fmt::format("experiment {}", key(run, step_no));
  f.hypothesis = r.spec.hypothesis;
  f.verdict = Verdict::kFailed;
  f.notes.push_back(fmt::format("abandoned after {} attempt(s): {}", r.attempts, why));
  return finish(run, step_no, f, Decision::kNone);
}

Result<ResumePlan> Journal::resume_plan(int64_t run, int max_attempts) const {
  RECUR_ASSIGN_OR_RETURN(std::vector<ExperimentRecord> all, experiments(run));
  ResumePlan p;
  p.run_id = run;
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT base_config FROM runs WHERE id = ?1", "resume plan"));
  s.bind(1, run);
  RECUR_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return not_found("journal {}: resume plan: no run {}", path(), run);
  RECUR_ASSIGN_OR_RETURN(p.config, diff_from_json(s.column_text(0), *db_, "resume plan"));
  for (const ExperimentRecord& e : all) {
    p.next_step = std::max(p.next_step, e.step + 1);
    switch (e.state) {
      case ExperimentState::kDone:
        p.done.push_back(e.step);
        if (e.decision == Decision::kKeep)
          for (const auto& [k, v] : e.spec.config_diff) p.config[k] = v;
        break;
      case ExperimentState::kRunning:
        (e.attempts >= max_attempts ? p.abandoned : p.rerun).push_back(e.step);
        break;
      case ExperimentState::kPlanned: p.pending.push_back(e.step); break;
    }
  }
  return p;
}

Status Journal::check_integrity() const {
  RECUR_ASSIGN_OR_RETURN(std::string ok, db_->query_text("PRAGMA integrity_check", "integrity check"));
  if (ok != "ok") return parse_error("journal {}: integrity check: {}", path(), ok);
  RECUR_ASSIGN_OR_RETURN(std::string fk, db_->query_text("PRAGMA foreign_key_check", "foreign key check"));
  if (!fk.empty()) return parse_error("journal {}: foreign key check: experiments of a missing run ({})", path(), fk);
  RECUR_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT id FROM runs ORDER BY id", "integrity check"));
  std::vector<std::string> problems;
  while (true) {
    RECUR_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    auto exps = experiments(s.column_int(0));  // parses every stored Feedback and config
    if (!exps) return unexpected(exps.error());
    for (const ExperimentRecord& e : *exps) {
      const std::string k = key(e.run_id, e.step);
      if (e.state == ExperimentState::kDone) {
        if (!e.feedback || !e.verdict || !e.decision || !e.ended_at) problems.push_back(k + ": done without a result");
        else if (auto v = validate_feedback(*e.feedback); !v) problems.push_back(k + ": " + v.error().message());
        else if (e.feedback->verdict != *e.verdict) problems.push_back(k + ": verdict differs from the Feedback's");
        if (e.attempts < 1) problems.push_back(k + ": done but never started");
      } else if (e.feedback) {
        problems.push_back(fmt::format("{}: {} with a Feedback", k, experiment_state_name(e.state)));
      }
      if (e.state == ExperimentState::kPlanned && e.attempts != 0) problems.push_back(k + ": planned but started");
    }
  }
  if (!problems.empty())
    return parse_error("journal {}: integrity check: {}", path(), fmt::join(problems, "; "));
  return ok_status();
}

}  // namespace recur::agent
