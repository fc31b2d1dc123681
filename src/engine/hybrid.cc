#include "engine/hybrid.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/hybrid_batch.h"
#include "engine/hybrid_reference.h"
#include "engine/w8a8.h"

namespace recur {

namespace {

// Binds expert e of a 3-d tensor {cols, rows, experts} as a 2-d Weight.
Result<std::vector<Weight>> bind_experts(const gguf::File& f, const std::string& name, int experts, int64_t rows,
                                         int64_t cols) {
  const gguf::TensorInfo* t = f.tensor(name);
  if (t == nullptr) return not_found("{}: tensor '{}' is missing", f.source(), name);
  if (t->dims != std::vector<uint64_t>{uint64_t(cols), uint64_t(rows), uint64_t(experts)})
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [{}, {}, {}]", f.source(), name,
                       t->info_position, fmt::join(t->dims, ", "), cols, rows, experts);
  std::vector<Weight> out;
  for (int e = 0; e < experts; ++e) {
    Weight w{fmt::format("{}[{}]", name, e), t->type, rows, cols, nullptr};
    w.data = t->data + size_t(e) * size_t(rows) * w.row_bytes();
    if (t->type == gguf::TensorType::kI8) RECUR_RETURN_IF_ERROR(attach_w8a8(f, *t, w, e, experts));
    out.push_back(w);
  }
  return out;
}

// A session is a batch of one sequence: step() is a forward of one row, prefill() of one run
// (chunks of max_batch_tokens rows). While an op tap or a layer observer is set, prefill steps
// token by token, since they observe single-row forwards.
class HybridSession final : public Session {
 public:
  HybridSession(std::unique_ptr<HybridBatch> batch, SeqId seq, int vocab)
      : batch_(std::move(batch)), seq_(seq), vocab_(vocab) {}

  int position() const override { return batch_->position(seq_); }

  Result<std::span<const float>> step(TokenId token) override {
    const BatchToken row{.seq = seq_, .token = token, .want_logits = true};
    batch_->set_op_tap(op_tap_);
    batch_->set_layer_observer(observer_ ? &observer_ : nullptr);
    return batch_->forward(std::span<const BatchToken>(&row, 1));
  }

  Result<std::span<const float>> prefill(std::span<const TokenId> tokens) override {
    if (tokens.empty()) return invalid_argument("prefill: no tokens");
    if (op_tap_ != nullptr || observer_) return Session::prefill(tokens);
    batch_->set_op_tap(nullptr);
    batch_->set_layer_observer(nullptr);
    return prefill_sequence(*batch_, seq_, batch_->options(), vocab_, tokens);
  }

 private:
  std::unique_ptr<HybridBatch> batch_;
  SeqId seq_;
  int vocab_;
};

}  // namespace

Result<std::unique_ptr<Session>> HybridModel::new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const {
  if (max_tokens <= 0 || max_tokens > config_.context)
    return invalid_argument("session of {} tokens (the context is {})", max_tokens, config_.context);
  RECUR_ASSIGN_OR_RETURN(std::string numerics, knobs.get("engine.numerics"));
  if (numerics == "f64_reference") return new_reference_session(file_, config_, max_tokens);
  const BatchOptions one{.max_sequences = 1, .max_tokens = max_tokens, .max_batch_tokens = std::min(max_tokens, 256)};
  RECUR_ASSIGN_OR_RETURN(HybridBatchOptions options, hybrid_batch_options(knobs, config_, one));
  RECUR_ASSIGN_OR_RETURN(auto batch, HybridBatch::create(*this, pool, options));
  RECUR_ASSIGN_OR_RETURN(SeqId seq, batch->add_sequence());
  return std::unique_ptr<Session>(std::make_unique<HybridSession>(std::move(batch), seq, config_.vocab));
}

Result<std::unique_ptr<Batch>> HybridModel::new_batch(ThreadPool& pool, const BatchOptions& batch,
                                                      const Config& knobs) const {
  RECUR_ASSIGN_OR_RETURN(std::string numerics, knobs.get("engine.numerics"));
  if (numerics == "f64_reference")
    return unsupported("engine.numerics=f64_reference runs one sequence per session (new_session); the float64 "
                       "reference has no batched forward");
  RECUR_ASSIGN_OR_RETURN(HybridBatchOptions options, hybrid_batch_options(knobs, config_, batch));
  RECUR_ASSIGN_OR_RETURN(auto b, HybridBatch::create(*this, pool, options));
  return std::unique_ptr<Batch>(std::move(b));
}

Result<std::unique_ptr<HybridModel>> HybridModel::from_file(gguf::File file) {
  std::unique_ptr<HybridModel> m(new HybridModel());
  m->file_ = std::move(file);
  const gguf::File& f = m->file_;
  RECUR_ASSIGN_OR_RETURN(m->config_, ModelConfig::from_gguf(f));
  const ModelConfig& c = m->config_;
  if (c.arch != Arch::kHybrid) return invalid_argument("{}: architecture is {}, not hybrid", f.source(), arch_name(c.arch));
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::from_gguf(f));
  if (int(vocab.tokens.size()) != c.vocab)
    return parse_error("{}: {} tokens in the vocabulary but vocab_size is {}", f.source(), vocab.tokens.size(), c.vocab);
  RECUR_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::create(std::move(vocab)));

  const int64_t K = c.kda_head_dim, qk = c.kda_key_heads * K, vd = c.kda_heads * K;
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  RECUR_ASSIGN_OR_RETURN(m->token_embedding, bind_weight(f, "token_embd.weight", c.vocab, c.dim));
  RECUR_ASSIGN_OR_RETURN(m->output_norm, bind_weight(f, "output_norm.weight", 1, c.dim));
  if (c.tied_embeddings) m->output = m->token_embedding;
  else {
    RECUR_ASSIGN_OR_RETURN(m->output, bind_weight(f, "output.weight", c.vocab, c.dim));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    auto bind = [&](Weight& w, const char* name, int64_t rows, int64_t cols) -> Status {
      RECUR_ASSIGN_OR_RETURN(w, bind_weight(f, p + name, rows, cols));
      return ok_status();
    };
    HybridLayerWeights L;
    L.kda = c.is_kda_layer(l);
    RECUR_RETURN_IF_ERROR(bind(L.attn_norm, "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.ffn_norm, "ffn_norm.weight", 1, c.dim));
    if (L.kda) {
      RECUR_RETURN_IF_ERROR(bind(L.wq, "kda_q.weight", qk, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wk, "kda_k.weight", qk, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wv, "kda_v.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.conv_q, "kda_conv_q.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.conv_k, "kda_conv_k.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.conv_v, "kda_conv_v.weight", vd, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.wf, "kda_f.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.a_log, "kda_a_log", 1, c.kda_heads));
      RECUR_RETURN_IF_ERROR(bind(L.dt_bias, "kda_dt_bias", 1, vd));
      RECUR_RETURN_IF_ERROR(bind(L.wb, "kda_b.weight", c.kda_heads, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_gate, "kda_out_gate.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_norm, "kda_out_norm.weight", 1, K));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, vd));
    } else {
      RECUR_RETURN_IF_ERROR(bind(L.wq, "attn_q.weight", q_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wk, "attn_k.weight", kv_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wv, "attn_v.weight", kv_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, q_dim));
    }
    if (c.n_experts == 0) {
      RECUR_RETURN_IF_ERROR(bind(L.w_gate, "ffn_gate.weight", c.ffn_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.w_up, "ffn_up.weight", c.ffn_dim, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.w_down, "ffn_down.weight", c.dim, c.ffn_dim));
    } else {
      RECUR_RETURN_IF_ERROR(bind(L.router, "ffn_gate_inp.weight", c.n_experts, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.exp_gate, bind_experts(f, p + "ffn_gate_exps.weight", c.n_experts, c.ffn_dim, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.exp_up, bind_experts(f, p + "ffn_up_exps.weight", c.n_experts, c.ffn_dim, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.exp_down, bind_experts(f, p + "ffn_down_exps.weight", c.n_experts, c.dim, c.ffn_dim));
      if (c.shared_expert) {
        RECUR_RETURN_IF_ERROR(bind(L.sh_gate, "ffn_gate_shexp.weight", c.ffn_dim, c.dim));
        RECUR_RETURN_IF_ERROR(bind(L.sh_up, "ffn_up_shexp.weight", c.ffn_dim, c.dim));
        RECUR_RETURN_IF_ERROR(bind(L.sh_down, "ffn_down_shexp.weight", c.dim, c.ffn_dim));
      }
    }
    m->layers.push_back(std::move(L));
  }
  return m;
}

}  // namespace recur
