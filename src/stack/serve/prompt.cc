#include "serve/prompt.h"

#include <algorithm>

#include "serve/chat_template.h"
#include "serve/image_prompt.h"

namespace recur::serve {

expected<PreparedRequest, ApiError> prepare_request(const CompletionRequest& request, const std::string& model_id,
                                                    const Model& model) {
  if (request.model != model_id)
    return unexpected(ApiError{404, fmt::format("the model '{}' does not exist; this server serves '{}'", request.model,
                                                 model_id),
                               "invalid_request_error", "model", "model_not_found"});
  const Tokenizer& tok = model.tokenizer();
  const int context = model.config().context;
  PreparedRequest p;
  if (request.kind == CompletionRequest::Kind::kChat && chat_has_images(request.messages)) {
    if (auto spliced = splice_chat_images(request.messages, model, p); !spliced) return unexpected(spliced.error());
  } else if (request.kind == CompletionRequest::Kind::kChat) {
    p.prompt_ids = tok.encode(render_chat_prompt(request.messages), tok.vocabulary().add_bos);
  } else if (request.prompt_ids_given) {
    for (size_t i = 0; i < request.prompt_ids.size(); ++i) {
      int64_t id = request.prompt_ids[i];
      if (id < 0 || id >= int64_t(tok.size()))
        return unexpected(bad_request("prompt", "invalid_token", "'prompt[{}]' is token {}; the vocabulary has ids 0 to {}",
                                      i, id, tok.size() - 1));
      p.prompt_ids.push_back(TokenId(id));
    }
  } else {
    p.prompt_ids = tok.encode(request.prompt, tok.vocabulary().add_bos);
  }
  if (p.prompt_ids.empty()) p.prompt_ids.push_back(tok.vocabulary().bos >= 0 ? tok.vocabulary().bos : 0);
  const int prompt_tokens = int(p.prompt_ids.size());
  if (prompt_tokens >= context)
    return unexpected(bad_request(request.kind == CompletionRequest::Kind::kChat ? "messages" : "prompt",
                                  "context_length_exceeded",
                                  "the prompt has {} tokens; this model's context is {}, which leaves no room to generate",
                                  prompt_tokens, context));
  int max_tokens = 0;
  if (request.sampling.max_tokens) {
    max_tokens = *request.sampling.max_tokens;
    if (prompt_tokens + max_tokens > context)
      return unexpected(bad_request("max_tokens", "context_length_exceeded",
                                    "the prompt has {} tokens and max_tokens is {}; together they exceed this model's "
                                    "context of {}",
                                    prompt_tokens, max_tokens, context));
  } else {
    int wanted = request.kind == CompletionRequest::Kind::kChat ? kDefaultChatTokens : kDefaultCompletionTokens;
    max_tokens = std::min(wanted, context - prompt_tokens);
  }
  p.options.max_new_tokens = max_tokens;
  p.options.sampling = {request.sampling.temperature, request.sampling.top_p, request.sampling.seed};
  p.options.stop_at_eos = !request.sampling.ignore_eos;
  p.stop = request.sampling.stop;
  p.logprobs = request.sampling.logprobs;
  p.prompt_logprobs = request.echo && request.sampling.logprobs.has_value();
  return p;
}

}  // namespace recur::serve
