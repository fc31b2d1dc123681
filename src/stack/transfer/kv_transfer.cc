#include "transfer/kv_transfer.h"

#include <cstddef>
#include <cstring>
#include <thread>

#include "core/knobs.h"
#include "trace/trace.h"

namespace recur::transfer {

// Registered here, where the serve roles and the Python bindings both link it, so a Python
// prefill server reads the same knob as `recur serve --role prefill`.
RECUR_KNOB(serve_kv_transfer,
           {.name = "serve.kv_transfer", .type = KnobType::kEnum, .choices = {"shm", "tcp", "ucx", "off"},
            .default_value = "shm", .components = {"thread:kv_transfer", "serve:prefill"},
            .acts = KnobActs::kServe | KnobActs::kPython,
            .help = "how a prefill worker sends a prompt's KV/KDA state to its decode worker: shared memory (one "
                    "host), TCP (any host), UCX (any host: one-sided RMA over what UCX picks, e.g. shared memory, TCP or RDMA "
                    "verbs; UCX_TLS and UCX_NET_DEVICES steer it; both workers need it), or off (prefill only: a baseline for the transfer's cost; such a "
                    "request fails at the router)"});

Status KvLayout::check() const {
  if (layers <= 0 || blocks_per_layer <= 0 || max_block_bytes == 0)
    return invalid_argument("kv layout: {} layers x {} blocks of {} bytes, expected all > 0", layers, blocks_per_layer,
                            max_block_bytes);
  return ok_status();
}

KvSender::KvSender(TransferEngine& engine, SegmentHandle peer, KvLayout layout)
    : engine_(engine), peer_(peer), layout_(layout) {}

KvSender::~KvSender() {
  // The engine's per-request timeout bounds every wait; release the staging only after it.
  while (!sequences_.empty()) {
    int64_t seq = sequences_.begin()->first;
    if (auto s = finish_sequence(seq, std::chrono::minutes(10)); !s && sequences_.count(seq) != 0) release(seq);
  }
}

void KvSender::release(int64_t seq) {
  Sequence& s = sequences_.at(seq);
  for (const auto& [layer, batch] : s.layer_batches) (void)engine_.free_batch(batch);
  (void)engine_.unregister_memory(s.staging.data());
  sequences_.erase(seq);
}

Result<KvSender::Sequence*> KvSender::find(int64_t seq) const {
  auto it = sequences_.find(seq);
  if (it == sequences_.end()) return not_found("kv sender: sequence {} was not begun", seq);
  return const_cast<Sequence*>(&it->second);
}

Status KvSender::begin_sequence(int64_t seq, uint64_t remote_offset, uint64_t generation) {
  RECUR_RETURN_IF_ERROR(layout_.check());
  if (generation == 0) return invalid_argument("kv sender: sequence {}: generation 0, expected > 0", seq);
  if (sequences_.count(seq) != 0) return invalid_argument("kv sender: sequence {} already begun", seq);
  Sequence s;
  s.remote_offset = remote_offset;
  s.generation = generation;
  s.staging = AlignedBuffer(size_t(layout_.layers) * size_t(layout_.blocks_per_layer) * kKvBlockHeaderBytes, true);
  RECUR_RETURN_IF_ERROR(engine_.register_memory(s.staging.data(), s.staging.size(), "kv_sender_staging"));
  sequences_.emplace(seq, std::move(s));
  return ok_status();
}

Status KvSender::send_layer(int64_t seq, int layer, std::span<const KvPage> pages) {
  RECUR_ASSIGN_OR_RETURN(Sequence * s, find(seq));
  if (layer < 0 || layer >= layout_.layers)
    return invalid_argument("kv sender: sequence {}: layer {}, expected 0..{}", seq, layer, layout_.layers - 1);
  if (pages.empty() || pages.size() > size_t(layout_.blocks_per_layer))
    return invalid_argument("kv sender: sequence {} layer {}: {} pages, expected 1..{}", seq, layer, pages.size(),
                            layout_.blocks_per_layer);
  if (s->layer_batches.count(layer) != 0)
    return invalid_argument("kv sender: sequence {} layer {} already sent", seq, layer);
  RECUR_ZONE("kv_transfer.submit");
  zone.arg("seq", seq).arg("layer", layer).arg("blocks", int64_t(pages.size()));
  std::vector<TransferRequest> requests;
  requests.reserve(pages.size() * 3);
  size_t bytes = 0;
  for (size_t i = 0; i < pages.size(); ++i) {
    const KvPage& page = pages[i];
    if (page.bytes == 0 || page.bytes > layout_.max_block_bytes)
      return invalid_argument("kv sender: sequence {} layer {} block {}: {} bytes, expected 1..{}", seq, layer, i,
                              page.bytes, layout_.max_block_bytes);
    KvBlockId id{seq, layer, int32_t(i)};
    // The checksum is left to the transfer thread (checksum_out below): the caller only queues.
    KvBlockFields fields;
    fields.seq = seq;
    fields.layer = layer;
    fields.block = int32_t(i);
    fields.length = page.bytes;
    fields.generation = s->generation;
    std::byte* image = s->staging.data() + (size_t(layer) * size_t(layout_.blocks_per_layer) + i) * kKvBlockHeaderBytes;
    std::memcpy(image, &s->generation, 8);
    std::memcpy(image + 8, &fields, sizeof fields);
    uint64_t slot = s->remote_offset + layout_.slot_offset(layer, int(i));
    TransferTrace trace{kv_block_flow_id(id), seq, layer};
    RECUR_FLOW_BEGIN("kv_block", trace.flow);
    // Payload and header first, the ready flag last: requests to one segment run in order, and
    // a failed one stops the rest of the batch there, so a flag never covers bad data.
    auto* checksum = reinterpret_cast<uint64_t*>(image + 8 + offsetof(KvBlockFields, checksum));
    requests.push_back({TransferOpcode::kWrite, const_cast<std::byte*>(page.data), peer_, slot + kKvBlockHeaderBytes,
                        page.bytes, trace, checksum, kv_block_checksum_seed(id, s->generation)});
    requests.push_back({TransferOpcode::kWrite, image + 8, peer_, slot + 8, sizeof fields, {0, seq, layer}});
    requests.push_back({TransferOpcode::kStoreFlag, image, peer_, slot, 8, {0, seq, layer}});
    bytes += page.bytes;
  }
  zone.arg("bytes", uint64_t(bytes));
  RECUR_ASSIGN_OR_RETURN(BatchId batch, engine_.allocate_batch(requests.size()));
  if (auto submitted = engine_.submit(batch, requests); !submitted) {
    (void)engine_.free_batch(batch);
    return submitted;
  }
  s->layer_batches[layer] = batch;
  return ok_status();
}

Result<std::vector<int>> KvSender::completed_layers(int64_t seq) const {
  RECUR_ASSIGN_OR_RETURN(Sequence * s, find(seq));
  std::vector<int> done;
  for (const auto& [layer, batch] : s->layer_batches) {
    if (engine_.wait_batch(batch, std::chrono::milliseconds(0))) done.push_back(layer);
  }
  return done;
}

Status KvSender::finish_sequence(int64_t seq, std::chrono::milliseconds timeout) {
  RECUR_ASSIGN_OR_RETURN(Sequence * s, find(seq));
  Status first = ok_status();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& [layer, batch] : s->layer_batches) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    Status st = engine_.wait_batch(batch, std::max(left, std::chrono::milliseconds(0)));
    if (!st && first) first = unexpected<Error>(st.error().with_context(fmt::format("kv sender: sequence {} layer {}", seq, layer)));
  }
  if (!first && first.error().code() == ErrorCode::kTimeout) return first;  // still in flight: keep state
  release(seq);
  return first;
}

bool KvReceiver::layer_ready(size_t area_offset, int layer, uint64_t generation) const {
  for (int b = 0; b < layout_.blocks_per_layer; ++b) {
    if (kv_block_ready(area_.data() + area_offset + layout_.slot_offset(layer, b)) != generation) return false;
  }
  return true;
}

Status KvReceiver::receive_layer(int64_t seq, uint64_t generation, size_t area_offset, int layer,
                                 std::span<const KvPageOut> out, std::chrono::milliseconds timeout) const {
  RECUR_RETURN_IF_ERROR(layout_.check());
  if (layer < 0 || layer >= layout_.layers || out.empty() || out.size() > size_t(layout_.blocks_per_layer))
    return invalid_argument("kv receiver: sequence {} layer {} with {} pages, expected layer 0..{} and 1..{} pages", seq,
                            layer, out.size(), layout_.layers - 1, layout_.blocks_per_layer);
  if (area_offset > area_.size() || layout_.sequence_bytes() > area_.size() - area_offset)
    return invalid_argument("kv receiver: sequence {}: area offset {} + {} bytes is past the area ({} bytes)", seq,
                            area_offset, layout_.sequence_bytes(), area_.size());
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (size_t b = 0; b < out.size(); ++b) {
    const std::byte* slot = area_.data() + area_offset + layout_.slot_offset(layer, int(b));
    KvBlockId id{seq, layer, int32_t(b)};
    for (int spins = 0;; ++spins) {
      if (kv_block_ready(slot) == generation) break;
      if (std::chrono::steady_clock::now() > deadline)
        return make_error(ErrorCode::kTimeout, "kv receiver: sequence {} layer {} block {}: not ready after {} ms", seq,
                          layer, b, timeout.count());
      if (spins < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    RECUR_ZONE("kv_transfer.recv");
    zone.arg("seq", seq).arg("layer", layer).arg("bytes", uint64_t(out[b].bytes));
    RECUR_FLOW_END("kv_block", kv_block_flow_id(id));
    RECUR_ASSIGN_OR_RETURN(bool ok, try_read_kv_block(slot, layout_.slot_bytes(), id, generation, {out[b].data, out[b].bytes}));
    if (!ok) return internal_error("kv receiver: sequence {} layer {} block {}: ready then not", seq, layer, b);
  }
  return ok_status();
}

}  // namespace recur::transfer
