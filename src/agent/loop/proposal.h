// What a proposer asks for, as one typed value: a knob change (the loop's step 4), or an
// experiment whose record comes back as the next state's last_feedback without changing the
// configuration: a code change built as a candidate (docs/candidates.md) or one read-only kernel
// probe. The loop journals it as JSON in the propose experiment's own field (Feedback::action),
// so a resumed run replays exactly what was proposed; nothing travels through note text.
// Plain data and pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "loop/search_space.h"
#include "core/status.h"
#include "kernels/registry.h"

namespace recur::agent {

enum class ActionKind { kSet, kPatch, kProbe };
enum class ProbeKind { kCheck, kBench };

std::string_view action_kind_name(ActionKind k);  // "set", "patch", "probe"
std::string_view probe_kind_name(ProbeKind k);    // "check", "bench"

// The kernel a probe or patch names, checked when the proposal is accepted: a registered
// kernel, a shape parsed against its parameters.
struct KernelRequest {
  std::string kernel;   // "" = none named (a patch may name none)
  std::string variant;  // "" = the configuration's kernel.<kernel>.variant
  std::string vs;       // bench: the variant to compare against ("" = none)
  std::optional<kernels::Shape> shape;  // nullopt = the kernel's default shape
  std::optional<double> budget_s;       // bench: seconds of timing
};

struct Proposal {
  ActionKind kind = ActionKind::kSet;
  std::string hypothesis;
  Candidate change;                     // kSet
  std::string patch;                    // kPatch: a unified diff against the tree the run started in
  ProbeKind probe = ProbeKind::kCheck;  // kProbe
  KernelRequest target;                 // kPatch (optional), kProbe
};

// Parses "M64,N4096" against a registered kernel's parameters; errors name the kernel and item.
Result<kernels::Shape> parse_kernel_shape(std::string_view kernel, std::string_view text);

// One line for people: "set python.release_gil=true (from false)", "probe bench rmsnorm variant
// avx2 vs scalar shape M8", "patch (kernel rmsnorm)".
std::string describe_proposal(const Proposal& p);

nlohmann::json proposal_to_json(const Proposal& p);
// Parses what proposal_to_json writes; errors name the member ("action.change.knob: expected a
// string").
Result<Proposal> proposal_from_json(const nlohmann::json& j);

}  // namespace recur::agent
