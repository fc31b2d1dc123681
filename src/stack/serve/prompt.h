// A parsed request checked against the served model: the model's name, the prompt tokenized (or
// its token ids range-checked), max_tokens resolved and checked against the context. What
// passes is ready for an engine worker.
#pragma once

#include <optional>
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
  // Image patches spliced into a chat prompt (image_prompt.h): embedding_dim floats per row;
  // embedding_row[position] is the row that prompt position takes, -1 for a token. Empty
  // without images.
  std::vector<float> embeddings;
  std::vector<int32_t> embedding_row;
  int embedding_dim = 0;
  // The row prompt position `position` takes instead of its token's embedding, or null.
  const float* prompt_embedding(size_t position) const {
    if (position >= embedding_row.size() || embedding_row[position] < 0) return nullptr;
    return embeddings.data() + size_t(embedding_row[position]) * size_t(embedding_dim);
  }
  GenerateOptions options;
  std::vector<std::string> stop;
  // Present: each generated token's logprob entry with this many alternatives (token_logprobs.h).
  std::optional<int> logprobs;
  bool prompt_logprobs = false;  // and the prompt's (echo): logits at every prompt position
};

// Unknown model: 404 model_not_found. Prompt plus max_tokens past the context: 400
// context_length_exceeded. A token id outside the vocabulary: 400.
expected<PreparedRequest, ApiError> prepare_request(const CompletionRequest& request, const std::string& model_id,
                                                    const Model& model);

}  // namespace recur::serve
