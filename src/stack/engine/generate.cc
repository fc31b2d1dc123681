#include "engine/generate.h"

#include "core/clock.h"
#include "engine/engine_kernels.h"

namespace recur {

Result<GenerateStats> generate(const Model& model, ThreadPool& pool, std::string_view prompt,
                               const GenerateOptions& options, const std::function<void(std::string_view)>& on_piece,
                               const Config& knobs) {
  const Tokenizer& tok = model.tokenizer();
  return generate_from_ids(model, pool, tok.encode(prompt, tok.vocabulary().add_bos), options,
                           [&](std::string_view piece) {
                             on_piece(piece);
                             return true;
                           },
                           knobs);
}

Result<GenerateStats> generate_from_ids(const Model& model, ThreadPool& pool, std::vector<TokenId> ids,
                                        const GenerateOptions& options,
                                        const std::function<bool(std::string_view)>& on_piece,
                                        const Config& knobs) {
  RECUR_RETURN_IF_ERROR(options.sampling.validate());
  if (options.max_new_tokens < 0) return invalid_argument("cannot generate {} tokens", options.max_new_tokens);
  const Tokenizer& tok = model.tokenizer();
  if (ids.empty()) ids.push_back(tok.vocabulary().bos >= 0 ? tok.vocabulary().bos : 0);
  const int capacity = int(ids.size()) + options.max_new_tokens;
  if (capacity > model.config().context)
    return invalid_argument("prompt of {} tokens plus {} new ones exceeds the context of {}", ids.size(),
                            options.max_new_tokens, model.config().context);
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, model.new_session(pool, capacity, knobs));
  RECUR_ASSIGN_OR_RETURN(KernelChoice sample_kernel, resolve_kernel(knobs, "sample"));
  Sampler sampler(options.sampling, sample_kernel);
  GenerateStats stats;
  stats.prompt_tokens = int(ids.size());

  int64_t t0 = now_ns();
  // One batched forward over the prompt (the session chunks it to its max_batch_tokens).
  RECUR_ASSIGN_OR_RETURN(std::span<const float> logits, session->prefill(ids));
  int64_t t1 = now_ns();
  stats.prefill_s = double(t1 - t0) / 1e9;

  bool first = true;
  for (int i = 0; i < options.max_new_tokens; ++i) {
    TokenId next = sampler.sample(logits);
    stats.tokens.push_back(next);
    ++stats.generated_tokens;
    if (options.stop_at_eos && next == tok.vocabulary().eos) break;
    std::string piece = tok.piece(next);
    if (first && tok.vocabulary().add_space_prefix && ids.size() <= 1 && !piece.empty() && piece[0] == ' ')
      piece.erase(0, 1);  // nothing before it: drop the word-start space
    first = false;
    if (!on_piece(piece)) {
      stats.stopped_by_caller = true;
      break;
    }
    if (i + 1 == options.max_new_tokens) break;
    RECUR_ASSIGN_OR_RETURN(logits, session->step(next));
  }
  stats.decode_s = double(now_ns() - t1) / 1e9;
  return stats;
}

}  // namespace recur
