// A Session over the one batched forward (forward.h): a batch of one sequence. step() is a
// forward of one row, prefill() of one run (chunks of max_batch_tokens rows). While an op tap or
// a layer observer is set, prefill steps token by token, since they observe single-row forwards.
#pragma once

#include <memory>

#include "engine/forward.h"

namespace recur {

Result<std::unique_ptr<Session>> new_batch_session(const TransformerModel& m, ThreadPool& pool,
                                                   const BatchOptions& batch,
                                                   const EngineOptions& options);

}  // namespace recur
