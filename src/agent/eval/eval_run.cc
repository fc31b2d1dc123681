// find_episode_files and run_eval (eval.h): the suite, episode x proposer x repeat, into one
// journal, each run's report beside it and the eval page over them.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "eval/eval.h"
#include "loop/proposer_factory.h"
#include "report/report.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;

// What a proposer spec is called in run names: builtin, random, cmd, openai.
std::string proposer_label(const std::string& spec) {
  const size_t colon = spec.find(':');
  return colon == std::string::npos ? spec : spec.substr(0, colon);
}

// random[:SEED] runs repeat k with SEED + k - 1, so the repeats draw different changes.
std::string proposer_for_repeat(const std::string& spec, int repeat) {
  if (spec != "random" && !spec.starts_with("random:")) return spec;
  uint64_t seed = 1;
  if (spec.size() > 7) seed = std::strtoull(spec.c_str() + 7, nullptr, 10);
  return fmt::format("random:{}", seed + uint64_t(repeat - 1));
}

Status write_text(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) return io_error("eval page {}: cannot write", tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return io_error("eval page {}: {}", path, ec.message());
  return ok_status();
}

}  // namespace

Result<std::vector<std::string>> find_episode_files(const std::vector<std::string>& inputs) {
  if (inputs.empty()) return invalid_argument("no episodes given: name episode files or folders (episodes/)");
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_regular_file(in, ec)) {
      out.push_back(in);
      continue;
    }
    if (!fs::is_directory(in, ec)) return not_found("{}: no such episode file or folder", in);
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(in, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_directory() && it->path().filename() == "gates") {
        it.disable_recursion_pending();  // gate specs, not episodes
        continue;
      }
      if (it->is_regular_file() && it->path().extension() == ".toml") found.push_back(it->path().string());
    }
    if (ec) return io_error("{}: {}", in, ec.message());
    if (found.empty()) return not_found("{}: no episode files (*.toml outside gates/) in this folder", in);
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Result<EvalResult> run_eval(const EvalOptions& o) {
  if (o.proposers.empty()) return invalid_argument("agent eval: no proposer named");
  if (o.repeat < 1) return invalid_argument("agent eval: --repeat must be at least 1, got {}", o.repeat);
  if (!(o.budget_scale > 0)) return invalid_argument("agent eval: --budget-scale must be positive, got {}", o.budget_scale);
  RECUR_ASSIGN_OR_RETURN(std::vector<std::string> files, find_episode_files(o.inputs));
  std::vector<Episode> episodes;
  for (const std::string& f : files) {
    RECUR_ASSIGN_OR_RETURN(Episode e, load_episode(f));
    episodes.push_back(std::move(e));
  }
  // Every proposer spec must make a proposer before anything runs (a typo is a usage error).
  for (const std::string& spec : o.proposers) {
    auto p = make_proposer(spec, o.proposer_options);
    if (!p) return unexpected(p.error());
  }

  EvalResult out;
  out.journal = o.journal;
  out.episodes = int(episodes.size());
  out.html = o.html.empty() ? (fs::path(o.journal).parent_path() / "eval.html").string() : o.html;
  std::error_code ec;
  if (const fs::path dir = fs::path(o.journal).parent_path(); !dir.empty()) fs::create_directories(dir, ec);
  if (ec) return io_error("eval journal {}: cannot create its folder: {}", o.journal, ec.message());
  std::set<std::string> names;
  {
    RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Journal> j, Journal::open(o.journal));
    RECUR_ASSIGN_OR_RETURN(auto runs, j->runs());
    for (const RunRecord& r : runs) names.insert(r.name);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int total = int(episodes.size() * o.proposers.size()) * o.repeat;
  int index = 0;
  for (const Episode& ep : episodes) {
    for (size_t pi = 0; pi < o.proposers.size(); ++pi) {
      const std::string& spec = o.proposers[pi];
      std::string label = proposer_label(spec);
      for (size_t pj = 0; pj < pi; ++pj)
        if (proposer_label(o.proposers[pj]) == label) label = fmt::format("{}{}", label, pi + 1);
      for (int k = 1; k <= o.repeat; ++k) {
        ++index;
        std::string name = fmt::format("{}.{}.r{}", ep.name, label, k);
        for (int n = 2; names.count(name); ++n) name = fmt::format("{}.{}.r{}-{}", ep.name, label, k, n);
        names.insert(name);
        if (o.progress) o.progress(fmt::format("[eval {}/{}] {} with {} (repeat {}), run {}", index, total, ep.name, spec, k, name));
        RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Proposer> proposer,
                               make_proposer(proposer_for_repeat(spec, k), o.proposer_options));
        LoopOptions lo;
        lo.journal = o.journal;
        lo.run_name = name;
        lo.budget_s = ep.budget_s * o.budget_scale;
        lo.proposer = proposer.get();
        lo.instruction_counts = o.instruction_counts;
        lo.progress = o.loop_progress;
        Result<LoopResult> r = run_episode(ep, lo);
        EvalRun run;
        if (r) {
          run = score_run(ep, *r);
        } else {
          run.episode = ep.name;
          run.episode_path = ep.path;
          run.run_name = name;
          run.error = true;
          run.outcome = "error: " + r.error().to_string();
          run.has_expect = ep.expect.has_value();
          run.expect_passes = ep.expect ? ep.expect->passes : true;
        }
        run.proposer = spec;
        run.repeat = k;
        if (auto j = Journal::open(o.journal, {.create = false})) {
          if (auto w = write_run_report(**j, name)) run.report = w->path;
        }
        if (o.progress)
          o.progress(fmt::format("[eval {}/{}] {} with {}: {}{} ({:.1f} s of probes, {} experiments)", index, total,
                                 ep.name, spec, run.outcome_met ? "expected outcome" : "expected outcome NOT met",
                                 run.passed ? ", gate pass" : "", run.probe_s, run.experiments));
        out.runs.push_back(std::move(run));
      }
    }
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.scores = summarize(out.runs);
  RECUR_RETURN_IF_ERROR(write_text(out.html, render_eval_html(out)));
  return out;
}

}  // namespace recur::agent
