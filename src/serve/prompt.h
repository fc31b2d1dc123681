// A parsed request checked against the served model: the model's name, the prompt tokenized (or
// its token ids range-checked), max_tokens resolved and checked against the context. What
// passes is ready for an engine worker.
#pragma once

#include <string>
#include <vector>

#include "core/expected.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "serve/api_error.h"
#include "serve/request.h"

namespace recur::serve {

// max_tokens when a completion request leaves it out (OpenAI's default), and the cap for chat
// requests, which otherwise run to the end of the context.
inline constexpr int kDefaultCompletionTokens = 16;
inline constexpr int kDefaultChatTokens = 512;

struct PreparedRequest {
  std::vector<TokenId> prompt_ids;
  GenerateOptions options;
  std::vector<std::string> stop;
};

// Unknown model: 404 model_not_found. Prompt plus max_tokens past the context: 400
// context_length_exceeded. A token id outside the vocabulary: 400.
expected<PreparedRequest, ApiError> prepare_request(const CompletionRequest& request, const std::string& model_id,
                                                    const Model& model);

}  // namespace recur::serve
