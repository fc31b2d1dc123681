#include "eval/suite_check.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "loop/search_space.h"
#include "gate/gate.h"
#include "kernels/registry.h"

namespace recur::agent {

namespace {

GateCheck run_check(const Episode& ep, std::string what, std::map<std::string, std::string> config,
                    gate::Outcome wanted, const SuiteCheckOptions& o) {
  GateCheck c{.what = std::move(what), .config = std::move(config), .wanted = wanted};
  const auto t0 = std::chrono::steady_clock::now();
  while (c.tries < std::max(1, o.tries)) {
    ++c.tries;
    if (o.progress) o.progress(fmt::format("{}: gate on the {} configuration (try {})", ep.name, c.what, c.tries));
    const gate::GateRunOptions defaults;
    auto r = gate::run_gate(gate_with_candidate(ep, c.config), defaults);
    if (!r) {
      c.got = gate::Outcome::kInconclusive;
      c.reason = "error: " + r.error().to_string();
      break;
    }
    c.got = r->verdict.outcome;
    c.reason = r->verdict.reason;
    if (c.got != gate::Outcome::kInconclusive) break;
  }
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

std::string config_text(const std::map<std::string, std::string>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s.empty() ? "(defaults)" : s;
}

}  // namespace

bool EpisodeCheck::ok() const {
  return std::all_of(gates.begin(), gates.end(), [](const GateCheck& g) { return g.ok(); });
}

std::vector<EpisodeCheck> check_suite(const std::vector<Episode>& episodes, const SuiteCheckOptions& o) {
  std::vector<EpisodeCheck> out;
  for (const Episode& ep : episodes) {
    if (!ep.expect) continue;
    const Expect& e = *ep.expect;
    EpisodeCheck c{.episode = ep.name, .path = ep.path};
    for (const auto& [k, v] : e.verify) {
      auto kv = kernel_variant_of(Candidate{.knob = k, .value = v, .from = v});
      const kernels::KernelSpec* kernel = kv ? kernels::KernelRegistry::global().find(kv->first) : nullptr;
      const kernels::VariantSpec* variant = kernel ? kernel->find_variant(kv->second) : nullptr;
      if (variant && !kernels::check_runnable(*variant))
        c.skipped = fmt::format("{}={} selects {} variant {}, which this CPU cannot run", k, v, kernel->name, v);
    }
    if (!c.skipped.empty()) {
      if (o.progress) o.progress(fmt::format("{}: skipped: {}", ep.name, c.skipped));
      out.push_back(std::move(c));
      continue;
    }
    const bool no_change = e.passes && e.root_cause.empty();
    c.gates.push_back(run_check(ep, "start", ep.start, no_change ? gate::Outcome::kPass : gate::Outcome::kFail, o));
    if (e.passes && !e.verify.empty()) {
      auto fixed = ep.start;
      for (const auto& [k, v] : e.verify) fixed[k] = v;
      c.gates.push_back(run_check(ep, "verify", fixed, gate::Outcome::kPass, o));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string render_suite_check(const std::vector<EpisodeCheck>& checks) {
  std::string out;
  int ok = 0;
  for (const EpisodeCheck& c : checks) {
    ok += c.ok();
    out += fmt::format("{} {} ({})\n", !c.skipped.empty() ? "skip" : c.ok() ? "ok  " : "FAIL", c.episode, c.path);
    if (!c.skipped.empty()) out += fmt::format("     {}\n", c.skipped);
    for (const GateCheck& g : c.gates)
      out += fmt::format("     {:<6} {}: wanted {}, got {} after {} tr{} ({:.1f} s): {}\n", g.what, config_text(g.config),
                         gate::outcome_name(g.wanted), gate::outcome_name(g.got), g.tries, g.tries == 1 ? "y" : "ies",
                         g.wall_s, g.reason);
  }
  const auto skipped = std::count_if(checks.begin(), checks.end(), [](const EpisodeCheck& c) { return !c.skipped.empty(); });
  out += fmt::format("{} of {} episodes behave as their [expect] says{}\n", ok, checks.size(),
                     skipped ? fmt::format(" ({} skipped: their expected fix cannot run on this CPU)", skipped) : "");
  return out;
}

nlohmann::json suite_check_json(const std::vector<EpisodeCheck>& checks) {
  nlohmann::json j = nlohmann::json::array();
  for (const EpisodeCheck& c : checks) {
    nlohmann::json gates = nlohmann::json::array();
    for (const GateCheck& g : c.gates)
      gates.push_back({{"what", g.what}, {"config", g.config}, {"wanted", gate::outcome_name(g.wanted)},
                       {"got", gate::outcome_name(g.got)}, {"ok", g.ok()}, {"tries", g.tries}, {"wall_s", g.wall_s},
                       {"reason", g.reason}});
    j.push_back({{"episode", c.episode}, {"path", c.path}, {"ok", c.ok()}, {"gates", gates}, {"skipped", c.skipped}});
  }
  return j;
}

}  // namespace recur::agent
