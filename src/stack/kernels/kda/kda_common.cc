// Names, validation and the workspace of kda.h.
#include <cmath>

#include "kernels/kda/kda.h"

namespace recur::kda {

std::string_view decode_variant_name(DecodeVariant v) {
  switch (v) {
    case DecodeVariant::kVtile: return "vtile";
    case DecodeVariant::kVtileRecip: return "vtile_recip";
    case DecodeVariant::kHoisted: return "hoisted";
    case DecodeVariant::kHoistedRecip: return "hoisted_recip";
  }
  return "?";
}

std::optional<DecodeVariant> parse_decode_variant(std::string_view name) {
  for (DecodeVariant v : kAllDecodeVariants) {
    if (decode_variant_name(v) == name) return v;
  }
  return std::nullopt;
}

std::string_view prefill_variant_name(PrefillVariant v) {
  switch (v) {
    case PrefillVariant::kRecurrent: return "recurrent";
    case PrefillVariant::kChunked64: return "chunked64";
    case PrefillVariant::kChunked16: return "chunked16";
  }
  return "?";
}

std::optional<PrefillVariant> parse_prefill_variant(std::string_view name) {
  for (PrefillVariant v : kAllPrefillVariants) {
    if (prefill_variant_name(v) == name) return v;
  }
  return std::nullopt;
}

std::string_view gate_form_name(GateForm g) {
  switch (g) {
    case GateForm::kPrecomputed: return "precomputed";
    case GateForm::kSoftplus: return "softplus";
    case GateForm::kSigmoidBounded: return "sigmoid_bounded";
  }
  return "?";
}

Status validate(const Shape& s, const Params& p, const Inputs& in) {
  if (s.batch < 1 || s.tokens < 1 || s.hk < 1 || s.hv < 1 || s.k < 1 || s.v < 1) {
    return invalid_argument("kda: shape B={} T={} HK={} HV={} K={} V={}: every dimension must be >= 1",
                            s.batch, s.tokens, s.hk, s.hv, s.k, s.v);
  }
  if (s.hv % s.hk != 0) {
    return invalid_argument("kda: HV={} is not a multiple of HK={}", s.hv, s.hk);
  }
  if (s.k > (1 << 20) || s.v > (1 << 20)) {
    return invalid_argument("kda: K={} V={}: head sizes above 2^20 are not supported", s.k, s.v);
  }
  if (p.block_v < 1) return invalid_argument("kda: block_v={}: expected >= 1", p.block_v);
  if (!(p.eps >= 0) || !(p.scale >= 0) || !std::isfinite(p.lower_bound)) {
    return invalid_argument("kda: eps={} scale={} lower_bound={}: expected eps >= 0, scale >= 0, finite bound",
                            p.eps, p.scale, p.lower_bound);
  }
  if (!in.q || !in.k || !in.v || !in.g || !in.b) {
    return invalid_argument("kda: q, k, v, g and b must all be given");
  }
  if (p.gate != GateForm::kPrecomputed && !in.a_log) {
    return invalid_argument("kda: gate form {} needs a_log", gate_form_name(p.gate));
  }
  return ok_status();
}

float* Workspace::floats(size_t n) {
  if (buffer_.size() < n * sizeof(float)) buffer_ = AlignedBuffer(n * sizeof(float));
  return reinterpret_cast<float*>(buffer_.data());
}

}  // namespace recur::kda
