#include "loop/expect.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "loop/knob_table.h"

namespace recur::agent {

namespace {

// A pattern with no regex syntax is its own only match, so it can stand in for a verify value.
bool is_literal(std::string_view pattern) {
  return std::all_of(pattern.begin(), pattern.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

constexpr size_t kMaxPatternBytes = 200;
constexpr int kMaxPatternNesting = 4;

int nesting(std::string_view pattern) {
  int depth = 0, most = 0;
  for (char c : pattern) {
    if (c == '(' || c == '[') most = std::max(most, ++depth);
    if ((c == ')' || c == ']') && depth > 0) --depth;
  }
  return most;
}

}  // namespace

std::string value_or_default(const std::map<std::string, std::string>& config, const std::string& knob) {
  if (auto it = config.find(knob); it != config.end()) return it->second;
  const KnobSpec* spec = KnobRegistry::global().find(knob);
  return spec ? spec->default_value : "";
}

bool ExpectedChange::matches(std::string_view value) const {
  try {
    return std::regex_match(value.begin(), value.end(), std::regex(value_pattern, std::regex::ECMAScript));
  } catch (const std::regex_error&) {
    return false;  // parse_expect refuses patterns that do not compile
  }
}

Result<Expect> parse_expect(gate::TomlTable& t, const KnobRegistry& registry) {
  Expect e;
  if (const toml::node* n = t.find("passes")) {
    if (!n->is_boolean()) return unexpected(t.error_at(*n, "passes", "expected true or false"));
    e.passes = n->as_boolean()->get();
  }
  RECUR_ASSIGN_OR_RETURN(auto why, t.string("why"));
  if (why) e.why = *why;

  RECUR_ASSIGN_OR_RETURN(auto root, t.strings("root_cause"));
  for (const std::string& entry : root.value_or(std::vector<std::string>{})) {
    const toml::node& at = *t.find("root_cause");
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      return unexpected(t.error_at(at, "root_cause", fmt::format("'{}': expected \"knob=VALUE\" (VALUE a regex)", entry)));
    ExpectedChange c{entry.substr(0, eq), entry.substr(eq + 1)};
    if (registry.find(c.knob) == nullptr)
      return unexpected(t.error_at(at, "root_cause", fmt::format("'{}': unknown knob '{}'", entry, c.knob)));
    // std::regex compiles and matches by recursion: a long or deeply nested pattern could
    // exhaust the stack, so patterns stay the size of a knob value's alternatives.
    if (c.value_pattern.size() > kMaxPatternBytes || nesting(c.value_pattern) > kMaxPatternNesting)
      return unexpected(t.error_at(at, "root_cause",
                                   fmt::format("'{}': a value pattern may have at most {} bytes and {} nested groups",
                                               entry.substr(0, 80), kMaxPatternBytes, kMaxPatternNesting)));
    try {
      std::regex check(c.value_pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& err) {
      return unexpected(t.error_at(at, "root_cause", fmt::format("'{}': bad regex: {}", entry, err.what())));
    }
    e.root_cause.push_back(std::move(c));
  }
  if (!e.passes && !e.root_cause.empty())
    return unexpected(t.error_at(*t.find("root_cause"), "root_cause",
                                 "passes = false says no configuration passes, so there is no root cause to name"));

  RECUR_ASSIGN_OR_RETURN(auto decoys, t.strings("decoys"));
  for (const std::string& k : decoys.value_or(std::vector<std::string>{})) {
    const toml::node& at = *t.find("decoys");
    if (registry.find(k) == nullptr) return unexpected(t.error_at(at, "decoys", fmt::format("unknown knob '{}'", k)));
    e.decoys.push_back(k);
    for (const ExpectedChange& c : e.root_cause)
      if (is_decoy(Expect{.decoys = {k}}, c.knob))
        return unexpected(t.error_at(at, "decoys", fmt::format("'{}' is also a root cause knob", k)));
  }

  RECUR_ASSIGN_OR_RETURN(auto verify, t.subtable("verify"));
  if (verify) {
    RECUR_RETURN_IF_ERROR(read_knob_table(*verify, verify->table(), "", e.verify));
    if (!e.passes)
      return parse_error("{}: [expect.verify]: passes = false says no configuration passes; nothing to verify",
                         t.file());
  }
  for (const ExpectedChange& c : e.root_cause)
    if (is_literal(c.value_pattern)) e.verify.try_emplace(c.knob, c.value_pattern);
  Config check(registry);
  for (const auto& [k, v] : e.verify)
    if (Status s = check.set(k, v); !s)
      return parse_error("{}: [expect.verify] {}: {}", t.file(), k, s.error().message());
  for (const ExpectedChange& c : e.root_cause) {
    auto it = e.verify.find(c.knob);
    if (it == e.verify.end())
      return parse_error("{}: [expect] root cause '{}' is a pattern; give [expect.verify] a concrete value for {} "
                         "(the suite check runs it)",
                         t.file(), c.text(), c.knob);
    if (!c.matches(it->second))
      return parse_error("{}: [expect.verify] {} = '{}' does not match the root cause '{}'", t.file(), c.knob,
                         it->second, c.text());
  }
  RECUR_RETURN_IF_ERROR(t.finish());
  return e;
}

bool is_decoy(const Expect& e, std::string_view knob) {
  for (const std::string& d : e.decoys) {
    if (d == knob) return true;
    if (d.ends_with("[]") && knob.starts_with(std::string_view(d).substr(0, d.size() - 1))) return true;
  }
  return false;
}

ExpectMatch match_expect(const Expect& e, const std::map<std::string, std::string>& start,
                         const std::map<std::string, std::string>& final_config) {
  ExpectMatch m;
  std::map<std::string, std::string> changed;
  std::set<std::string> knobs;
  for (const auto& [k, v] : start) knobs.insert(k);
  for (const auto& [k, v] : final_config) knobs.insert(k);
  for (const std::string& k : knobs) {
    const std::string after = value_or_default(final_config, k);
    if (after != value_or_default(start, k)) changed[k] = after;
  }
  for (const ExpectedChange& c : e.root_cause) {
    auto it = changed.find(c.knob);
    if (it == changed.end() || !c.matches(it->second)) m.missing.push_back(c.text());
  }
  for (const auto& entry : changed) {
    const std::string& k = entry.first;  // named, not bound: lambdas may not capture bindings (clang-14)
    const std::string& v = entry.second;
    const bool expected = std::any_of(e.root_cause.begin(), e.root_cause.end(),
                                      [&](const ExpectedChange& c) { return c.knob == k; });
    if (is_decoy(e, k)) m.decoys_kept.push_back(k + "=" + v);
    else if (!expected) m.extra.push_back(k + "=" + v);
  }
  m.root_cause_named = m.missing.empty() && m.decoys_kept.empty();
  return m;
}

}  // namespace recur::agent
