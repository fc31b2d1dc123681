// A token's logprob under the engine's logits: log-softmax of the raw logits (temperature 1, as
// OpenAI and vLLM report them, whatever the request's sampling temperature), and the most likely
// alternatives, ties to the lowest id as the greedy sampler (engine/sampler.h argmax) breaks them.
#pragma once

#include <span>

#include "engine/tokenizer.h"
#include "serve/logprobs_json.h"

namespace recur::serve {

// `logits`: one row of vocabulary size; `token` is in range. The entry's text is tok.piece(token).
TokenLogprob token_logprob(std::span<const float> logits, TokenId token, int top, const Tokenizer& tok);

}  // namespace recur::serve
