#include "engine/batch_plan.h"

#include <algorithm>

namespace recur {

int batch_slot_position(std::span<const BatchSlot> slots, SeqId seq) {
  if (seq < 0 || size_t(seq) >= slots.size() || !slots[size_t(seq)].live) return -1;
  return slots[size_t(seq)].position;
}

Result<size_t> batch_free_slot(std::string_view who, std::span<const BatchSlot> slots) {
  size_t slot = 0;
  while (slot < slots.size() && slots[slot].live) ++slot;
  if (slot == slots.size())
    return make_error(ErrorCode::kFailedPrecondition, "{}: all {} sequences (max_sequences) are live", who,
                      slots.size());
  return slot;
}

Result<BatchPlan> plan_batch(std::string_view who, std::span<const BatchToken> tokens, std::span<const BatchSlot> slots,
                             const BatchOptions& o, int vocab, const kernels::attention::PagedKvCache* kv) {
  if (int64_t(tokens.size()) > o.max_batch_tokens)
    return invalid_argument("{}: forward of {} tokens exceeds max_batch_tokens {}", who, tokens.size(),
                            o.max_batch_tokens);
  BatchPlan p;
  std::vector<int> run_of(slots.size(), -1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const BatchToken& t = tokens[i];
    if (batch_slot_position(slots, t.seq) < 0)
      return not_found("{}: token {} of the forward names sequence {}, which is not live", who, i, t.seq);
    if (t.token < 0 || t.token >= vocab)
      return invalid_argument("{}: token {} of the forward is id {}, outside the vocabulary of {}", who, i, t.token,
                              vocab);
    int& run = run_of[size_t(t.seq)];
    if (run < 0) {
      run = int(p.runs.size());
      p.runs.push_back({.seq = t.seq, .first = 0, .count = 0, .start = slots[size_t(t.seq)].position});
    }
    ++p.runs[size_t(run)].count;
  }
  int64_t row = 0, pages = 0;
  for (BatchPlan::Run& run : p.runs) {
    run.first = row;
    row += run.count;
    p.all_single = p.all_single && run.count == 1;
    if (run.start + run.count > o.max_tokens)
      return invalid_argument("{}: sequence {} holds {} tokens; {} more would pass max_tokens {}", who, run.seq,
                              run.start, run.count, o.max_tokens);
    pages += batch_kv_pages_for(run.start + run.count) - batch_kv_pages_for(run.start);
  }
  if (kv != nullptr && pages > kv->free_pages())
    return make_error(ErrorCode::kFailedPrecondition, "{}: the forward needs {} new KV pages but {} of {} are free",
                      who, pages, kv->free_pages(), kv->config().num_pages);
  p.tokens.resize(tokens.size());
  p.positions.resize(tokens.size());
  p.embeddings.resize(tokens.size());
  std::vector<int64_t> next(p.runs.size());
  for (size_t i = 0; i < p.runs.size(); ++i) next[i] = p.runs[i].first;
  for (const BatchToken& t : tokens) {
    const size_t run = size_t(run_of[size_t(t.seq)]);
    const int64_t r = next[run]++;
    p.tokens[size_t(r)] = t.token;
    p.embeddings[size_t(r)] = t.embedding;
    p.positions[size_t(r)] = p.runs[run].start + int(r - p.runs[run].first);
    if (t.want_logits) p.want.push_back(r);
  }
  return p;
}

void batch_embed_rows(const BatchPlan& plan, const Weight& table, int dim, float* x) {
  for (int64_t i = 0; i < plan.rows(); ++i) {
    float* row = x + i * dim;
    if (const float* given = plan.embeddings[size_t(i)]) {
      std::copy(given, given + dim, row);
    } else {
      table.dequantize_row(plan.tokens[size_t(i)], row);
    }
  }
}

Result<std::span<const float>> prefill_sequence(Batch& batch, SeqId seq, const BatchOptions& options, int vocab,
                                                std::span<const TokenId> tokens) {
  const int position = batch.position(seq);
  if (position + int64_t(tokens.size()) > options.max_tokens)
    return invalid_argument("prefill: {} tokens after {} pass the session's {} tokens", tokens.size(), position,
                            options.max_tokens);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= vocab)
      return invalid_argument("prefill: token {} is id {}, outside the vocabulary of {}", i, tokens[i], vocab);
  const size_t chunk = size_t(options.max_batch_tokens);
  std::span<const float> logits;
  std::vector<BatchToken> rows;
  for (size_t at = 0; at < tokens.size(); at += chunk) {
    const size_t n = std::min(chunk, tokens.size() - at);
    rows.clear();
    for (size_t i = 0; i < n; ++i) rows.push_back({.seq = seq, .token = tokens[at + i], .want_logits = false});
    rows.back().want_logits = at + n == tokens.size();
    RECUR_ASSIGN_OR_RETURN(logits, batch.forward(rows));
  }
  return logits;
}

}  // namespace recur
