// What every architecture's Batch (model.h) shares: the sequence slots, the plan of one
// forward (the caller's tokens grouped into one run per sequence, every contract error found
// before any state changes), and a single-sequence prefill in chunks of max_batch_tokens.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/model.h"
#include "engine/weights.h"
#include "kernels/attention/kv_cache.h"

namespace recur {

// Tokens per page of the paged attention cache of the architectures' batches.
inline constexpr int kBatchKvPageSize = 16;
inline int64_t batch_kv_pages_for(int64_t tokens) { return (tokens + kBatchKvPageSize - 1) / kBatchKvPageSize; }

struct BatchSlot {
  bool live = false;
  int position = 0;  // tokens the sequence holds
};

// One forward's rows, grouped by sequence (each sequence's tokens in the caller's order).
struct BatchPlan {
  struct Run {
    SeqId seq;
    int64_t first;  // first row
    int64_t count;
    int start;  // the sequence's position before the forward
  };
  std::vector<TokenId> tokens;  // per row
  std::vector<int> positions;   // per row
  std::vector<const float*> embeddings;  // per row: BatchToken::embedding (null: look up the token)
  std::vector<Run> runs;
  std::vector<int64_t> want;  // rows whose logits are returned, in the caller's order
  bool all_single = true;     // every run is one token (batched decode)
  int64_t rows() const { return int64_t(tokens.size()); }
};

// Checks `tokens` against the contract (live sequences, ids inside the vocabulary, at most
// max_batch_tokens, no sequence past max_tokens, enough free pages in `kv`, null without
// attention layers) and groups them; errors start with `who` ("llama batch").
Result<BatchPlan> plan_batch(std::string_view who, std::span<const BatchToken> tokens, std::span<const BatchSlot> slots,
                             const BatchOptions& options, int vocab, const kernels::attention::PagedKvCache* kv);

// The first hidden state of each row: the given embedding, else the token's row of `table`.
void batch_embed_rows(const BatchPlan& plan, const Weight& table, int dim, float* x);

// The slot's position, -1 when `seq` is not live.
int batch_slot_position(std::span<const BatchSlot> slots, SeqId seq);
// The first free slot; an error naming `who` when all are live.
Result<size_t> batch_free_slot(std::string_view who, std::span<const BatchSlot> slots);

// Session::prefill of a batch of one sequence: checks the tokens, then forwards them in chunks
// of max_batch_tokens rows, logits for the last token only.
Result<std::span<const float>> prefill_sequence(Batch& batch, SeqId seq, const BatchOptions& options, int vocab,
                                                std::span<const TokenId> tokens);

}  // namespace recur
