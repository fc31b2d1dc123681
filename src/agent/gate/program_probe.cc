#include "gate/program_probe.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/child_process.h"
#include "core/clock.h"

namespace recur::gate {

namespace {

namespace fs = std::filesystem;

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// build/python beside (or a few folders above) this executable, when it holds the recur package.
std::string recur_python_dir() {
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; up < 4 && !ec && !dir.empty(); ++up, dir = dir.parent_path()) {
    const fs::path candidate = dir / "python";
    if (fs::exists(candidate / "recur" / "__init__.py", ec)) return candidate.string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

std::string python_executable() {
  const char* p = std::getenv("RECUR_PYTHON");
  return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
}

// The last line of `out` that is a JSON object.
std::optional<nlohmann::json> last_json_object(const std::string& out) {
  size_t end = out.size();
  while (end > 0) {
    const size_t begin = out.rfind('\n', end - 1);
    const size_t from = begin == std::string::npos ? 0 : begin + 1;
    nlohmann::json j = nlohmann::json::parse(out.substr(from, end - from), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
    if (begin == std::string::npos) break;
    end = begin;
  }
  return std::nullopt;
}

// How messages name the program: its command as the spec writes it (argv[0] alone is often just
// the interpreter, /bin/sh or python3; placeholders stay unexpanded, so the line stays short).
std::string program_label(const ProgramWorkload& w) {
  return fmt::format("[workload.program] `{}`", fmt::join(w.command, " "));
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A metric the program printed: a positive finite number, or absent.
Result<std::optional<double>> printed_metric(const ProgramRun& run, std::string_view name, const std::string& program) {
  auto it = run.output.find(name);
  if (it == run.output.end()) return std::optional<double>();
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0)
    return invalid_argument("{}: printed {} = {}, expected a positive number", program, name, it->dump());
  return std::optional<double>(it->get<double>());
}

}  // namespace

Result<std::vector<std::string>> program_argv(const GateSpec& spec, const std::vector<std::string>& extra) {
  const ProgramWorkload& w = *spec.program;
  std::string model;
  if (!w.model.empty()) {
    EngineWorkload e;
    e.model = w.model;
    e.synthetic = w.synthetic;
    RECUR_ASSIGN_OR_RETURN(model, resolve_model_path(e));
  }
  const std::string spec_dir = spec.path.empty() ? "." : fs::path(spec.path).parent_path().string();
  std::vector<std::string> argv;
  for (const std::string& a : w.command)
    argv.push_back(replace_all(replace_all(replace_all(a, "{python}", python_executable()), "{spec_dir}",
                                           spec_dir.empty() ? "." : spec_dir),
                               "{model}", model));
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::vector<std::string> program_environment(const Config& config) {
  std::string knobs;
  for (const auto& [k, v] : config.overrides()) knobs += fmt::format("{}{}={}", knobs.empty() ? "" : " ", k, v);
  std::vector<std::string> env = {"RECUR_KNOBS=" + knobs};
  if (const std::string dir = recur_python_dir(); !dir.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    env.push_back("PYTHONPATH=" + dir + (old != nullptr && *old != '\0' ? ":" + std::string(old) : ""));
  }
  return env;
}

Status check_program_allowed(const std::string& program) {
  const char* allow = std::getenv(kProgramAllowEnv);
  if (allow == nullptr) return ok_status();
  std::string_view list(allow);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (list.substr(0, comma) == program) return ok_status();
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  return make_error(ErrorCode::kFailedPrecondition,
                    "[workload.program] runs {}, which is not among the programs this process may run ({}=\"{}\"; "
                    "under `recur mcp`, start the server with --allow-exec {})",
                    program, kProgramAllowEnv, allow, program);
}

Result<ProgramRun> run_program(const GateSpec& spec, const NamedConfig& arm, const std::vector<std::string>& extra) {
  RECUR_ASSIGN_OR_RETURN(std::vector<std::string> argv, program_argv(spec, extra));
  RECUR_RETURN_IF_ERROR(check_program_allowed(argv.front()));
  const std::string program = fmt::format("{} (arm {})", program_label(*spec.program), arm.name);
  RECUR_ASSIGN_OR_RETURN(ChildResult r, run_child(argv, {.timeout_s = spec.program->timeout_s,
                                                         .max_stdout_bytes = size_t{1} << 20,
                                                         .env = program_environment(arm.config)}));
  if (r.timed_out)
    return make_error(ErrorCode::kTimeout, "{}: ran over timeout_s = {} and was stopped", program, spec.program->timeout_s);
  if (r.exit_code != 0)
    return make_error(ErrorCode::kFailedPrecondition, "{}: exit code {}{}", program, r.exit_code,
                      r.err_tail.empty() ? "" : ": " + trimmed(r.err_tail));
  std::optional<nlohmann::json> out = last_json_object(r.out);
  if (!out)
    return parse_error("{}: printed no JSON object on stdout (expected a line like {{\"prefill_tok_s\": 1234.5}}){}",
                       program, r.out.empty() ? "; stdout was empty" : "");
  return ProgramRun{std::move(*out), r.seconds};
}

Result<std::vector<ThroughputResult>> measure_program_throughput(const GateSpec& spec,
                                                                 const std::vector<NamedConfig>& arms,
                                                                 const Progress& progress) {
  const ProgramWorkload& w = *spec.program;
  std::vector<ThroughputResult> out(arms.size());
  const int64_t t0 = now_ns();
  for (int r = 0; r < w.warmup_runs; ++r)
    for (const NamedConfig& arm : arms) {
      if (progress) progress(fmt::format("bench.program warm-up {}/{} arm {}", r + 1, w.warmup_runs, arm.name));
      RECUR_RETURN_IF_ERROR(run_program(spec, arm));
    }
  for (int r = 0; r < w.runs; ++r) {
    for (size_t i = 0; i < arms.size(); ++i) {
      const size_t a = r % 2 == 0 ? i : arms.size() - 1 - i;  // A B, B A, ...
      if (progress) progress(fmt::format("bench.program sample {}/{} arm {}", r + 1, w.runs, arms[a].name));
      const std::string program = fmt::format("{} (arm {})", program_label(w), arms[a].name);
      std::optional<double> prefill, decode;  // the best of best_of runs: preemption only ever adds time
      for (int k = 0; k < w.best_of; ++k) {
        RECUR_ASSIGN_OR_RETURN(ProgramRun run, run_program(spec, arms[a]));
        RECUR_ASSIGN_OR_RETURN(std::optional<double> p, printed_metric(run, "prefill_tok_s", program));
        RECUR_ASSIGN_OR_RETURN(std::optional<double> d, printed_metric(run, "decode_tok_s", program));
        if (!p && !d)
          return invalid_argument("{}: printed neither prefill_tok_s nor decode_tok_s: {}", program, run.output.dump());
        if (p) prefill = std::max(prefill.value_or(0), *p);
        if (d) decode = std::max(decode.value_or(0), *d);
      }
      if (prefill) out[a].prefill_tok_s.push_back(*prefill);
      if (decode) out[a].decode_tok_s.push_back(*decode);
    }
  }
  const double cost_s = double(now_ns() - t0) / 1e9;
  RECUR_ASSIGN_OR_RETURN(std::vector<std::string> argv, program_argv(spec));
  std::string cmd;
  for (const std::string& x : argv) cmd += (cmd.empty() ? "" : " ") + x;
  for (size_t a = 0; a < arms.size(); ++a) {
    out[a].arm = arms[a].name;
    summarize_throughput(out[a], "bench.program", cost_s / double(arms.size()),
                         fmt::format("program `{}` arm={} ({})", cmd, arms[a].name, config_text(arms[a].config)),
                         fmt::format("{} samples, each the best of {} run(s), after {} warm-up run(s), interleaved "
                                     "with {} other arm(s); one process per run; median with bootstrap 95% CI",
                                     w.runs, w.best_of, w.warmup_runs, arms.size() - 1));
  }
  return out;
}

Result<ProgramRun> run_program_traced(const GateSpec& spec, const NamedConfig& arm, const std::string& trace_path) {
  std::error_code ec;
  fs::remove(trace_path, ec);
  RECUR_ASSIGN_OR_RETURN(ProgramRun run, run_program(spec, arm, {spec.program->trace_flag, trace_path}));
  if (!fs::exists(trace_path, ec))
    return not_found("{} (arm {}): run with {} {} but wrote no trace there", program_label(*spec.program), arm.name,
                     spec.program->trace_flag, trace_path);
  return run;
}

}  // namespace recur::gate
