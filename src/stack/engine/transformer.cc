#include "engine/transformer.h"

#include <algorithm>

#include <sys/mman.h>

#include "engine/batch_session.h"
#include "engine/forward.h"
#include "trace/trace.h"

namespace recur {

Status TransformerModel::bind_common(gguf::File file, Arch arch) {
  file_ = std::move(file);
  const gguf::File& f = file_;
  RECUR_ASSIGN_OR_RETURN(config_, ModelConfig::from_gguf(f));
  const ModelConfig& c = config_;
  if (c.arch != arch)
    return invalid_argument("{}: architecture is {}, not {}", f.source(), arch_name(c.arch), arch_name(arch));
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::from_gguf(f));
  if (int(vocab.tokens.size()) != c.vocab)
    return parse_error("{}: {} tokens in the vocabulary but vocab_size is {}", f.source(), vocab.tokens.size(), c.vocab);
  RECUR_ASSIGN_OR_RETURN(tokenizer_, Tokenizer::create(std::move(vocab)));
  RECUR_ASSIGN_OR_RETURN(token_embedding, bind_weight(f, "token_embd.weight", c.vocab, c.dim));
  RECUR_ASSIGN_OR_RETURN(output_norm, bind_weight(f, "output_norm.weight", 1, c.dim));
  if (c.tied_embeddings) output = token_embedding;
  else {
    RECUR_ASSIGN_OR_RETURN(output, bind_weight(f, "output.weight", c.vocab, c.dim));
  }
  return ok_status();
}

void TransformerModel::for_each_projection(const std::function<void(Weight&)>& fn) {
  if (!config_.tied_embeddings) fn(output);  // a tied head is the embedding table, read by rows
  // Not the router: it meets fp32 activations (a flip in the top-k is a discontinuity), and
  // regrouped Q8_0 (and the AMX tiles) always meet Q8_0 activations.
  for (LayerWeights& L : layers) {
    for (Weight* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.wf, &L.wb, &L.out_gate, &L.w_gate, &L.w_up, &L.w_down, &L.sh_gate,
                      &L.sh_up, &L.sh_down})
      fn(*w);
    for (auto* experts : {&L.exp_gate, &L.exp_up, &L.exp_down})
      for (Weight& w : *experts) fn(w);
  }
}

Status TransformerModel::attach_amx_tiles(const ModelLoadOptions& options) {
  if (!options.amx_tiles) return ok_status();
  RECUR_ZONE("amx_repack");
  Status status = ok_status();
  size_t bytes = 0;
  int64_t weights = 0;
  for_each_projection([&](Weight& w) {
    if (!status || !amx_tileable(w)) return;
    status = recur::attach_amx_tiles(w, *options.amx_tiles);
    if (status) bytes += w.amx->bytes(), ++weights;
  });
  zone.arg("weights", weights);
  zone.arg("bytes", int64_t(bytes));
  return status;
}

Status TransformerModel::regroup_weights(const ModelLoadOptions& options) {
  // The tiles are repacked from the file's rows, before regrouping may release those pages.
  RECUR_RETURN_IF_ERROR(attach_amx_tiles(options));
  std::vector<Weight*> to_regroup;
  for_each_projection([&](Weight& w) {
    const bool wanted = w.type == gguf::TensorType::kF16 ? options.regroup_f16 : options.regroup_q8_0;
    if (w.data != nullptr && wanted && regroupable(w)) to_regroup.push_back(&w);
  });
  auto bytes_of = [](const Weight* w) { return w->row_bytes() * size_t(w->rows); };
  auto slot_of = [&](const Weight* w) { return (bytes_of(w) + 63) / 64 * 64; };  // each copy 64-byte aligned
  size_t total = 0;
  for (const Weight* w : to_regroup) total += slot_of(w);
  if (total == 0) return ok_status();
  // 2 MiB pages as for the anonymous weights (engine.weights_memory): one DTLB entry per 2 MiB.
  constexpr size_t kHuge = size_t(2) << 20;
  regrouped_ = AlignedBuffer((total + kHuge - 1) / kHuge * kHuge, /*zeroed=*/false, kHuge);
  madvise(regrouped_.data(), regrouped_.size(), MADV_HUGEPAGE);
  size_t at = 0;
  for (Weight* w : to_regroup) {
    RECUR_ASSIGN_OR_RETURN(Weight v, regroup_weight(*w, regrouped_.data() + at));
    if (file_.mapping().contains(w->data, bytes_of(w))) {
      RECUR_ASSIGN_OR_RETURN(size_t released, file_.mapping().release_pages(w->data, bytes_of(w)));
      (void)released;
    }
    at += slot_of(w);
    *w = std::move(v);
  }
  return ok_status();
}

Result<std::unique_ptr<Session>> TransformerModel::new_session(ThreadPool& pool, int max_tokens,
                                                               const EngineOptions& options) const {
  if (max_tokens <= 0 || max_tokens > config_.context)
    return invalid_argument("session of {} tokens (the context is {})", max_tokens, config_.context);
  if (options.numerics == Numerics::kF64Reference) return reference_session(max_tokens);
  const BatchOptions one{.max_sequences = 1, .max_tokens = max_tokens, .max_batch_tokens = std::min(max_tokens, 256)};
  return new_batch_session(*this, pool, one, options);
}

Result<std::unique_ptr<Batch>> TransformerModel::new_batch(ThreadPool& pool, const BatchOptions& batch,
                                                           const EngineOptions& options) const {
  if (options.numerics == Numerics::kF64Reference)
    return unsupported("engine.numerics=f64_reference runs one sequence per session (new_session); the float64 "
                       "reference has no batched forward");
  RECUR_ASSIGN_OR_RETURN(auto b, Forward::create(*this, pool, batch, options));
  return std::unique_ptr<Batch>(std::move(b));
}

}  // namespace recur
