#include "loop/proposer_factory.h"

#include <algorithm>

#include "loop/builtin_proposer.h"
#include "loop/command_proposer.h"
#include "loop/openai_proposer.h"
#include "loop/random_proposer.h"

namespace recur::agent {

Result<std::unique_ptr<Proposer>> make_proposer(std::string_view spec, const ProposerOptions& options) {
  const ProposerLimits& l = options.limits;
  const bool openai_options = l.max_calls > 0 || l.max_tokens > 0 || l.max_s > 0 || !options.model.empty() ||
                              !options.log_path.empty();
  if (openai_options && !spec.starts_with("openai:"))
    return invalid_argument("--proposer '{}': the --proposer-max-*, --proposer-model and --proposer-log options are "
                            "for openai:URL proposers",
                            spec);
  if (spec == "builtin") return std::unique_ptr<Proposer>(std::make_unique<BuiltinProposer>());
  if (spec == "random") return std::unique_ptr<Proposer>(std::make_unique<RandomProposer>(1));
  if (spec.starts_with("random:")) {
    const std::string_view digits = spec.substr(7);
    uint64_t seed = 0;
    const bool ok = !digits.empty() && digits.size() <= 19 &&
                    std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!ok) return invalid_argument("--proposer '{}': expected random or random:SEED (SEED a non-negative integer)", spec);
    for (char c : digits) seed = seed * 10 + uint64_t(c - '0');
    return std::unique_ptr<Proposer>(std::make_unique<RandomProposer>(seed));
  }
  for (std::string_view prefix : {"cmd:", "command:"})
    if (spec.starts_with(prefix) && spec.size() > prefix.size())
      return std::unique_ptr<Proposer>(std::make_unique<CommandProposer>(std::string(spec.substr(prefix.size()))));
  if (spec.starts_with("openai:")) {
    RECUR_ASSIGN_OR_RETURN(std::unique_ptr<OpenAIProposer> p, OpenAIProposer::create(spec.substr(7), options));
    return std::unique_ptr<Proposer>(std::move(p));
  }
  return invalid_argument("--proposer '{}': expected builtin, random[:SEED] (the matched-budget baseline), cmd:PROGRAM (also command:PROGRAM) or openai:URL (an "
                          "OpenAI-compatible endpoint such as http://127.0.0.1:8000/v1; external proposers, "
                          "docs/agent.md)",
                          spec);
}

}  // namespace recur::agent
