#include "engine/sequence_state.h"

#include <algorithm>
#include <cstring>

#include "engine/hybrid_kda.h"
#include "kernels/attention/kv_cache.h"

namespace recur {

Status Batch::state_parts(SeqId, SequenceStateParts&) {
  return unsupported("this batch cannot export or import sequence state");
}

namespace {

constexpr uint32_t kSeqStateMagic = 0x54535352;  // "RSST"
constexpr uint32_t kSeqStateAttention = 1;
constexpr uint32_t kSeqStateKda = 2;
constexpr uint32_t kSeqStateLatent = 3;  // MLA: a keys-only cache of [latent ; rope key] per token

struct SeqStateHeader {
  uint32_t magic = kSeqStateMagic;
  uint32_t kind = 0;
  int64_t count = 0;
};
static_assert(sizeof(SeqStateHeader) == kSequenceStateHeaderBytes);

Result<SequenceStateParts> seq_state_parts(Batch& batch, SeqId seq, int layer) {
  SequenceStateParts parts;
  RECUR_RETURN_IF_ERROR(batch.state_parts(seq, parts));
  if (layer < 0 || layer >= int(parts.kv_layer.size()))
    return invalid_argument("sequence state: layer {} is outside [0, {})", layer, parts.kv_layer.size());
  return parts;
}

// The copies import writes and set_sequence_position checks: the parts, then their replicas.
std::vector<SequenceStateParts*> seq_state_copies(SequenceStateParts& parts) {
  std::vector<SequenceStateParts*> copies{&parts};
  for (SequenceStateParts& r : parts.replicas) copies.push_back(&r);
  return copies;
}

// Floats of one token's K (MLA: its [latent ; rope key]), [kv_heads, head_dim].
size_t seq_state_key_floats(const kernels::attention::PagedKvCache& kv) {
  return size_t(kv.config().kv_heads) * size_t(kv.config().head_dim);
}
// Floats of one token of one attention layer: K and V (MLA's keys-only cache: K alone).
size_t seq_state_token_floats(const kernels::attention::PagedKvCache& kv) {
  return (kv.config().keys_only ? 1 : 2) * seq_state_key_floats(kv);
}
uint32_t seq_state_kind(const kernels::attention::PagedKvCache& kv) {
  return kv.config().keys_only ? kSeqStateLatent : kSeqStateAttention;
}

}  // namespace

Result<size_t> layer_state_bytes(Batch& batch, SeqId seq, int layer, int tokens) {
  RECUR_ASSIGN_OR_RETURN(SequenceStateParts parts, seq_state_parts(batch, seq, layer));
  if (hybrid::KdaSequenceState* kda = parts.kda[size_t(layer)]) {
    return kSequenceStateHeaderBytes + (kda->conv_window().size() + kda->plain_state().size()) * sizeof(float);
  }
  int64_t n = tokens;
  if (n < 0) {
    RECUR_ASSIGN_OR_RETURN(n, parts.kv->length(parts.kv_seq, parts.kv_layer[size_t(layer)]));
  }
  return kSequenceStateHeaderBytes + size_t(n) * seq_state_token_floats(*parts.kv) * sizeof(float);
}

Status export_layer_state(Batch& batch, SeqId seq, int layer, std::span<std::byte> out) {
  RECUR_ASSIGN_OR_RETURN(SequenceStateParts parts, seq_state_parts(batch, seq, layer));
  RECUR_ASSIGN_OR_RETURN(size_t need, layer_state_bytes(batch, seq, layer));
  if (out.size() != need)
    return invalid_argument("export layer {} of sequence {}: {} bytes given, the state is {}", layer, seq, out.size(),
                            need);
  SeqStateHeader h;
  std::byte* payload = out.data() + kSequenceStateHeaderBytes;
  if (hybrid::KdaSequenceState* kda = parts.kda[size_t(layer)]) {
    h.kind = kSeqStateKda;
    h.count = int64_t(kda->conv_window().size() + kda->plain_state().size());
    std::memcpy(payload, kda->conv_window().data(), kda->conv_window().size_bytes());
    std::memcpy(payload + kda->conv_window().size_bytes(), kda->plain_state().data(), kda->plain_state().size_bytes());
  } else {
    const int kv_layer = parts.kv_layer[size_t(layer)];
    h.kind = seq_state_kind(*parts.kv);
    RECUR_ASSIGN_OR_RETURN(h.count, parts.kv->length(parts.kv_seq, kv_layer));
    const size_t token = seq_state_token_floats(*parts.kv), key = seq_state_key_floats(*parts.kv);
    std::vector<float> k(key), v(token - key);
    for (int64_t t = 0; t < h.count; ++t) {
      RECUR_RETURN_IF_ERROR(parts.kv->read(parts.kv_seq, kv_layer, t, k, v));
      std::byte* at = payload + size_t(t) * token * sizeof(float);
      std::memcpy(at, k.data(), k.size() * sizeof(float));
      if (!v.empty()) std::memcpy(at + k.size() * sizeof(float), v.data(), v.size() * sizeof(float));
    }
  }
  std::memcpy(out.data(), &h, sizeof h);
  return ok_status();
}

Status import_layer_state(Batch& batch, SeqId seq, int layer, std::span<const std::byte> in) {
  RECUR_ASSIGN_OR_RETURN(SequenceStateParts parts, seq_state_parts(batch, seq, layer));
  if (in.size() < kSequenceStateHeaderBytes)
    return parse_error("import layer {} of sequence {}: {} bytes, shorter than the {}-byte header", layer, seq,
                       in.size(), kSequenceStateHeaderBytes);
  SeqStateHeader h;
  std::memcpy(&h, in.data(), sizeof h);
  if (h.magic != kSeqStateMagic)
    return parse_error("import layer {}: byte 0: magic {:#x}, expected {:#x} ('RSST')", layer, h.magic,
                       kSeqStateMagic);
  const std::byte* payload = in.data() + kSequenceStateHeaderBytes;
  const size_t payload_bytes = in.size() - kSequenceStateHeaderBytes;
  const std::vector<SequenceStateParts*> copies = seq_state_copies(parts);
  if (hybrid::KdaSequenceState* kda = parts.kda[size_t(layer)]) {
    const size_t floats = kda->conv_window().size() + kda->plain_state().size();
    if (h.kind != kSeqStateKda || h.count != int64_t(floats) || payload_bytes != floats * sizeof(float))
      return parse_error("import layer {} (KDA, {} floats): block of kind {} with {} floats in {} bytes", layer,
                         floats, h.kind, h.count, payload_bytes);
    for (SequenceStateParts* copy : copies) {
      hybrid::KdaSequenceState* to = copy->kda[size_t(layer)];
      if (to->conv_window().size() != kda->conv_window().size() || to->plain_state().size() != kda->plain_state().size())
        return internal_error("import layer {} of sequence {}: a replica's KDA state differs in size", layer, seq);
    }
    for (SequenceStateParts* copy : copies) {
      hybrid::KdaSequenceState* to = copy->kda[size_t(layer)];
      std::memcpy(to->conv_window().data(), payload, to->conv_window().size_bytes());
      std::memcpy(to->plain_state().data(), payload + to->conv_window().size_bytes(), to->plain_state().size_bytes());
    }
    return ok_status();
  }
  const size_t token_floats = seq_state_token_floats(*parts.kv), key_floats = seq_state_key_floats(*parts.kv);
  const uint32_t kind = seq_state_kind(*parts.kv);
  if (h.kind != kind || h.count < 0 || payload_bytes != size_t(h.count) * token_floats * sizeof(float))
    return parse_error("import layer {} ({}, {} floats a token): block of kind {} with {} tokens in {} bytes", layer,
                       kind == kSeqStateLatent ? "MLA latent" : "attention", token_floats, h.kind, h.count,
                       payload_bytes);
  // Every copy must be fresh before any is written, so a refusal changes nothing.
  for (SequenceStateParts* copy : copies) {
    if (seq_state_token_floats(*copy->kv) != token_floats || seq_state_kind(*copy->kv) != kind)
      return internal_error("import layer {} of sequence {}: a replica's KV cache differs in shape", layer, seq);
    RECUR_ASSIGN_OR_RETURN(int64_t held, copy->kv->length(copy->kv_seq, copy->kv_layer[size_t(layer)]));
    if (held != 0)
      return make_error(ErrorCode::kFailedPrecondition,
                        "import layer {} of sequence {}: it already holds {} tokens; import needs a fresh sequence",
                        layer, seq, held);
  }
  std::vector<float> k(key_floats), v(token_floats - key_floats);  // a copy: the block may be unaligned
  for (int64_t t = 0; t < h.count; ++t) {
    const std::byte* at = payload + size_t(t) * token_floats * sizeof(float);
    std::memcpy(k.data(), at, k.size() * sizeof(float));
    if (!v.empty()) std::memcpy(v.data(), at + k.size() * sizeof(float), v.size() * sizeof(float));
    for (SequenceStateParts* copy : copies) {
      RECUR_RETURN_IF_ERROR(copy->kv->append(copy->kv_seq, copy->kv_layer[size_t(layer)], k, v));
    }
  }
  return ok_status();
}

Status set_sequence_position(Batch& batch, SeqId seq, int position) {
  RECUR_ASSIGN_OR_RETURN(SequenceStateParts parts, seq_state_parts(batch, seq, 0));
  if (position < 0) return invalid_argument("sequence {}: position {} is negative", seq, position);
  const std::vector<SequenceStateParts*> copies = seq_state_copies(parts);
  for (size_t c = 0; c < copies.size(); ++c) {
    const SequenceStateParts& copy = *copies[c];
    for (size_t l = 0; l < copy.kv_layer.size(); ++l) {
      if (copy.kv_layer[l] < 0) continue;
      RECUR_ASSIGN_OR_RETURN(int64_t held, copy.kv->length(copy.kv_seq, copy.kv_layer[l]));
      if (held != position)
        return make_error(ErrorCode::kFailedPrecondition,
                          "sequence {}: layer {} holds {} tokens (copy {}: 0 is rank 0's), not the position {}", seq, l,
                          held, c, position);
    }
  }
  *parts.position = position;
  return ok_status();
}

}  // namespace recur
