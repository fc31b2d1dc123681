#include "engine/batch_session.h"

#include <algorithm>

#include "trace/trace.h"

namespace recur {

namespace {

class BatchSession final : public Session {
 public:
  BatchSession(std::unique_ptr<Forward> batch, SeqId seq, int vocab)
      : batch_(std::move(batch)), seq_(seq), vocab_(vocab) {}

  int position() const override { return batch_->position(seq_); }

  Result<std::span<const float>> step(TokenId token) override {
    const BatchToken row{.seq = seq_, .token = token, .want_logits = true};
    RECUR_ZONE("step");  // a session's step, as traces and gate specs name it
    zone.arg("pos", position());
    batch_->set_op_tap(op_tap_);
    batch_->set_layer_observer(observer_ ? &observer_ : nullptr);
    return batch_->forward(std::span<const BatchToken>(&row, 1));
  }

  Result<std::span<const float>> prefill(std::span<const TokenId> tokens) override {
    if (tokens.empty()) return invalid_argument("prefill: no tokens");
    if (op_tap_ != nullptr || observer_) return Session::prefill(tokens);
    batch_->set_op_tap(nullptr);
    batch_->set_layer_observer(nullptr);
    RECUR_ZONE("step");  // a step of several tokens: every layer zone stays inside a step zone
    zone.arg("pos", position());
    zone.arg("tokens", int64_t(tokens.size()));
    return prefill_sequence(*batch_, seq_, batch_->options(), vocab_, tokens);
  }

 private:
  std::unique_ptr<Forward> batch_;
  SeqId seq_;
  int vocab_;
};

}  // namespace

Result<std::unique_ptr<Session>> new_batch_session(const TransformerModel& m, ThreadPool& pool,
                                                   const BatchOptions& batch_options, const EngineOptions& options) {
  RECUR_ASSIGN_OR_RETURN(auto batch, Forward::create(m, pool, batch_options, options));
  RECUR_ASSIGN_OR_RETURN(SeqId seq, batch->add_sequence());
  return std::unique_ptr<Session>(std::make_unique<BatchSession>(std::move(batch), seq, m.config().vocab));
}

}  // namespace recur
