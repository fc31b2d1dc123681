#include "engine/hybrid_kda.h"

#include <algorithm>
#include <cmath>

#include "trace/trace.h"

namespace recur::hybrid {
namespace {

float kda_silu(float x) { return x / (1.0f + std::exp(-x)); }

kda::Params kda_layer_params(int64_t head_dim) {
  kda::Params p;
  p.gate = kda::GateForm::kSoftplus;
  p.block_v = int(std::min<int64_t>(64, head_dim));
  return p;
}

// Channels [c0, c1) of one row through the convolution, the window shifted; kTaps > 0 fixes the
// tap count at compile time (the window shift then needs no memmove call per channel), 0 reads
// `taps`. The same operations in the same order either way (the same bits).
template <int kTaps>
void convolve_row(const float* weights, float* row, float* window, int64_t c0, int64_t c1, int taps_at_run) {
  const int taps = kTaps > 0 ? kTaps : taps_at_run;
  for (int64_t ch = c0; ch < c1; ++ch) {
    const float* w = weights + ch * taps;
    float* win = window + size_t(ch) * size_t(taps - 1);
    float y = w[taps - 1] * row[ch];
    for (int j = 0; j < taps - 1; ++j) y += w[j] * win[j];
    for (int j = 0; j + 1 < taps - 1; ++j) win[j] = win[j + 1];
    if (taps > 1) win[taps - 2] = row[ch];
    row[ch] = kda_silu(y);
  }
}

}  // namespace

Result<KdaSequenceState> KdaSequenceState::create(const LayerShard& S, int64_t K, int conv_size,
                                                  const KdaOptions& options) {
  KdaSequenceState s;
  s.options_ = options;
  s.conv_size_ = conv_size;
  s.shape_ = {.batch = 1, .tokens = 1, .hk = S.k_heads.size(), .hv = S.v_heads.size(), .k = K, .v = K};
  const int64_t channels = 2 * S.k_heads.size() * K + S.v_heads.size() * K;
  s.window_.assign(size_t(channels) * size_t(conv_size - 1), 0.0f);
  if (options.replay) {
    RECUR_ASSIGN_OR_RETURN(kda::ReplayCache cache,
                           kda::ReplayCache::create(s.shape_, kda::StateLayout::kKV, options.replay_window));
    s.replay_.emplace(std::move(cache));
  } else {
    s.state_.assign(size_t(S.v_heads.size() * K * K), 0.0f);
  }
  s.reset();
  return s;
}

void KdaSequenceState::reset() {
  std::fill(window_.begin(), window_.end(), 0.0f);
  std::fill(state_.begin(), state_.end(), 0.0f);
  if (replay_) {
    const std::vector<float> zero(size_t(shape_.hv * shape_.k * shape_.v), 0.0f);
    replay_->reset(zero.data());
  }
}

// Short causal depthwise convolution with SiLU over channels [c0, c1) of `channels`, `tokens`
// rows, in token order; the window holds each channel's previous conv_size - 1 inputs, oldest
// first.
void KdaSequenceState::convolve(const std::vector<float>& weights, float* x, int64_t channels, int64_t tokens,
                                float* window, int64_t c0, int64_t c1) const {
  for (int64_t t = 0; t < tokens; ++t) {
    if (conv_size_ == 4) convolve_row<4>(weights.data(), x + t * channels, window, c0, c1, 4);
    else convolve_row<0>(weights.data(), x + t * channels, window, c0, c1, conv_size_);
  }
}

// q, k and v convolved: their channels in claimed chunks on the pool, each channel whole on one
// thread (the same bits on any pool); serial work a decode step's ~2k SiLUs a layer and a
// prompt's T times that.
void KdaSequenceState::convolve_all(const LayerShard& S, const KdaRows& rows, ThreadPool* pool) {
  const int64_t qk = shape_.hk * shape_.k, vd = shape_.hv * shape_.k, all = 2 * qk + vd;
  const size_t w = size_t(conv_size_ - 1);
  auto range = [&](int64_t c0, int64_t c1) {
    const struct {
      const std::vector<float>& weights;
      float* x;
      int64_t begin, channels;
    } parts[] = {{S.conv_q, rows.q, 0, qk}, {S.conv_k, rows.k, qk, qk}, {S.conv_v, rows.v, 2 * qk, vd}};
    for (const auto& p : parts) {
      const int64_t b = std::max(c0, p.begin) - p.begin, e = std::min(c1, p.begin + p.channels) - p.begin;
      if (b < e) convolve(p.weights, p.x, p.channels, rows.tokens, window_.data() + w * size_t(p.begin), b, e);
    }
  };
  if (pool == nullptr || pool->size() == 1) return range(0, all);
  const int64_t per_chunk = std::max<int64_t>(64, all / (8 * int64_t(pool->size())));
  pool->parallel_claim((all + per_chunk - 1) / per_chunk,
                       [&](int64_t c, int) { range(c * per_chunk, std::min(all, (c + 1) * per_chunk)); });
}

Status KdaSequenceState::run(const LayerShard& S, const KdaRows& rows, float* out, ThreadPool* pool,
                             kda::Workspace& ws, std::vector<float>& scratch) {
  const int64_t K = shape_.k;
  convolve_all(S, rows, pool);
  kda::Shape shape = shape_;
  shape.tokens = rows.tokens;
  const kda::Params params = kda_layer_params(K);
  const kda::Inputs in{rows.q, rows.k, rows.v, rows.g, rows.b, S.a_log.data(), S.dt_bias.data()};
  if (rows.tokens == 1 && replay_) {
    // Each zone is named after the registered kernel it runs (kernel.<name>.variant).
    RECUR_ZONE("kda_replay_decode");
    zone.arg("heads", shape.hv);
    zone.arg("variant", kda::decode_variant_name(options_.replay_decode).data());
    return kda::replay_step(*replay_, shape, params, in, out, options_.replay_decode, pool, ws);
  }
  if (rows.tokens == 1) {
    RECUR_ZONE("kda_decode");
    zone.arg("heads", shape.hv);
    zone.arg("variant", kda::decode_variant_name(options_.decode).data());
    return kda::decode(shape, params, in, state_.data(), out, options_.decode, pool, ws);
  }
  RECUR_ZONE("kda_prefill");
  zone.arg("heads", shape.hv);
  zone.arg("tokens", rows.tokens);
  zone.arg("variant", kda::prefill_variant_name(options_.prefill).data());
  if (!replay_) return kda::prefill(shape, params, in, state_.data(), out, options_.prefill, pool, ws);
  // ReplaySSM: the prompt runs through the plain prefill from the current state, whose result
  // becomes the checkpoint (buffer empty).
  scratch.resize(size_t(shape.hv * K * K));
  replay_->materialize(scratch.data());
  RECUR_RETURN_IF_ERROR(kda::prefill(shape, params, in, scratch.data(), out, options_.prefill, pool, ws));
  replay_->reset(scratch.data());
  return ok_status();
}

}  // namespace recur::hybrid
