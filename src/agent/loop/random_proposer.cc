#include "loop/random_proposer.h"

#include <random>

#include <fmt/format.h>

namespace recur::agent {

namespace {

// Layers of the gate's synthetic model, for indexed per-layer knobs (0 when the gate names a
// model file: the family is then left out rather than guessed).
int synthetic_layers(const gate::GateSpec& g) {
  if (g.engine && g.engine->synthetic) return g.engine->synthetic->layers;
  if (g.program && g.program->synthetic) return g.program->synthetic->layers;
  return 0;
}

uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::string RandomProposer::name() const { return fmt::format("random:{}", seed_); }

Result<std::vector<std::vector<Candidate>>> random_search_space(const AgentState& state) {
  const Episode& ep = *state.episode;
  const std::set<std::string> fixed(ep.fixed.begin(), ep.fixed.end());
  Config current;
  for (const auto& [k, v] : state.config) RECUR_RETURN_IF_ERROR(current.set(k, v));
  std::vector<std::vector<Candidate>> space;
  for (const KnobSpec* knob : KnobRegistry::global().all()) {
    if (fixed.count(knob->name)) continue;
    std::vector<std::string> names = {knob->name};
    if (knob->name.ends_with("[]")) {
      names.clear();
      const std::string stem = knob->name.substr(0, knob->name.size() - 2);
      for (int i = 0; i < synthetic_layers(ep.gate); ++i) names.push_back(fmt::format("{}[{}]", stem, i));
    }
    for (const std::string& name : names) {
      if (fixed.count(name)) continue;
      auto v = current.get(name);
      const std::string value = name == knob->name ? effective_value(current, *knob) : (v ? *v : knob->default_value);
      std::vector<Candidate> open;
      for (Candidate& c : changes_of(*knob, name, value)) {
        if (state.tried.count(c.key()) || state.visited.count(apply_change(state.config, c))) continue;
        c.component = "random";
        c.why = "uniform random single-knob change";
        open.push_back(std::move(c));
      }
      if (!open.empty()) space.push_back(std::move(open));
    }
  }
  return space;
}

Result<std::optional<Proposal>> RandomProposer::propose(const AgentState& state) {
  RECUR_ASSIGN_OR_RETURN(auto space, random_search_space(state));
  if (space.empty()) return std::optional<Proposal>();
  std::mt19937_64 rng(mix(seed_ ^ mix(uint64_t(state.iteration) * 1000003 + state.tried.size() * 1009 +
                                      state.rejected.size())));
  const auto& knob = space[std::uniform_int_distribution<size_t>(0, space.size() - 1)(rng)];
  Proposal p;
  p.change = knob[std::uniform_int_distribution<size_t>(0, knob.size() - 1)(rng)];
  p.hypothesis = fmt::format("random search: {} {} -> {} (one of {} knobs with an untried change)", p.change.knob,
                             p.change.from, p.change.value, space.size());
  return std::optional<Proposal>(std::move(p));
}

}  // namespace recur::agent
