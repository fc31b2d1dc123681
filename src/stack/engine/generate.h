// Text generation over a LlamaModel: tokenize, prefill the prompt, decode N tokens, stream
// each piece to a callback, and time both phases.
#pragma once

#include <functional>
#include <string_view>

#include "core/status.h"
#include "engine/model.h"
#include "engine/sampler.h"

namespace recur {

struct GenerateOptions {
  int max_new_tokens = 32;
  SamplerOptions sampling;
  bool stop_at_eos = true;
};

struct GenerateStats {
  int prompt_tokens = 0;
  int generated_tokens = 0;
  double prefill_s = 0;
  double decode_s = 0;
  double prefill_tok_s() const { return prefill_s > 0 ? prompt_tokens / prefill_s : 0; }
  double decode_tok_s() const { return decode_s > 0 ? generated_tokens / decode_s : 0; }
  std::vector<TokenId> tokens;  // the generated ids
  bool stopped_by_caller = false;  // on_piece asked to stop before max_new_tokens or EOS
};

Result<GenerateStats> generate(const Model& model, ThreadPool& pool, std::string_view prompt,
                               const GenerateOptions& options, const std::function<void(std::string_view)>& on_piece,
                               const Config& knobs = Config());

// The same over prompt ids already tokenized (the server checks the prompt's length before it
// queues a request). on_piece returns false to stop early (a client went away, a stop string
// matched); the piece that returned false counts as generated.
Result<GenerateStats> generate_from_ids(const Model& model, ThreadPool& pool, std::vector<TokenId> ids,
                                        const GenerateOptions& options,
                                        const std::function<bool(std::string_view)>& on_piece,
                                        const Config& knobs = Config());

}  // namespace recur
