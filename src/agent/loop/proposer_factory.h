// The proposer a --proposer spec names (the factory, apart from the Proposer interface).
#pragma once

#include <memory>
#include <string_view>

#include "loop/proposer.h"

namespace recur::agent {

// "builtin", "random[:SEED]" (RandomProposer, the matched-budget baseline), "cmd:PROGRAM ARGS..."
// (CommandProposer) or "openai:URL" (OpenAIProposer). Errors
// name the accepted forms.
Result<std::unique_ptr<Proposer>> make_proposer(std::string_view spec, const ProposerOptions& options = {});

}  // namespace recur::agent
