// Layer-wise KV transfer from a prefill worker to a decode worker.
//
// The decode side owns a receive area in registered memory (allocate_shared for shared-memory
// peers); each sequence gets `KvLayout::sequence_bytes()` of it, one slot per (layer, block)
// (kv_block.h). The prefill side calls KvSender::send_layer after computing each layer: the
// layer's blocks are queued on the engine's transfer thread at once and the call returns, so
// layer L moves while layer L+1 computes. The decode side calls KvReceiver::receive_layer per
// layer; it waits for that layer's blocks only, verifies them and copies them out.
//
// Both take pointers, lengths and ids: no model or cache types (a page of PagedKvCache, or any
// other memory, is a KvPage). The sender's pages and staging must be registered memory.
//
// Tracing: send_layer is a zone "kv_transfer.submit" on the caller's thread where each block's
// flow begins ("produced"); the transfer thread's "kv_transfer.send" zone steps it ("sent");
// receive_layer's "kv_transfer.recv" zone ends it ("received"). Zones carry seq, layer, bytes.
//
// Thread-safety: a KvSender may be used from one thread at a time; KvReceiver methods are const
// and may run on several threads (distinct sequences or layers).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/status.h"
#include "transfer/kv_block.h"
#include "transfer/transfer_engine.h"

namespace recur::transfer {

struct KvLayout {
  int layers = 0;
  int blocks_per_layer = 0;
  size_t max_block_bytes = 0;  // largest block payload (a slot's capacity)

  size_t slot_bytes() const { return kv_block_slot_bytes(max_block_bytes); }
  size_t sequence_bytes() const { return size_t(layers) * size_t(blocks_per_layer) * slot_bytes(); }
  size_t slot_offset(int layer, int block) const {
    return (size_t(layer) * size_t(blocks_per_layer) + size_t(block)) * slot_bytes();
  }
  Status check() const;
};

struct KvPage {
  const std::byte* data = nullptr;
  size_t bytes = 0;
};
struct KvPageOut {
  std::byte* data = nullptr;
  size_t bytes = 0;
};

class KvSender {
 public:
  KvSender(TransferEngine& engine, SegmentHandle peer, KvLayout layout);
  ~KvSender();
  KvSender(const KvSender&) = delete;
  KvSender& operator=(const KvSender&) = delete;

  // The sequence's receive area starts at `remote_offset` in the peer's segment; its blocks
  // carry `generation` (> 0; a reused area needs a new generation).
  Status begin_sequence(int64_t seq, uint64_t remote_offset, uint64_t generation);
  // Queues block i = pages[i] of `layer` (at most blocks_per_layer pages, each at most
  // max_block_bytes) and returns without waiting.
  Status send_layer(int64_t seq, int layer, std::span<const KvPage> pages);
  // Layers of the sequence whose every request completed, in layer order, so far.
  Result<std::vector<int>> completed_layers(int64_t seq) const;
  // Waits for everything sent for the sequence, frees its batches and staging; the first error.
  Status finish_sequence(int64_t seq, std::chrono::milliseconds timeout);

 private:
  struct Sequence {
    uint64_t remote_offset = 0;
    uint64_t generation = 0;
    AlignedBuffer staging;  // one 64-byte header image per (layer, block), registered
    std::map<int, BatchId> layer_batches;
  };
  Result<Sequence*> find(int64_t seq) const;
  void release(int64_t seq);  // frees batches and staging, done or not

  TransferEngine& engine_;
  SegmentHandle peer_;
  KvLayout layout_;
  std::map<int64_t, Sequence> sequences_;
};

class KvReceiver {
 public:
  // `area`: local memory peers write sequences' receive areas into.
  KvReceiver(std::span<std::byte> area, KvLayout layout) : area_(area), layout_(layout) {}

  // True once every block of the layer is published with `generation` (nothing is read).
  bool layer_ready(size_t area_offset, int layer, uint64_t generation) const;
  // Waits until the layer's blocks are published, then verifies each and copies block i into
  // out[i] (whose size must be the block's length). kTimeout if not all arrived in `timeout`;
  // kParse if one is corrupt or truncated (never returned as data).
  Status receive_layer(int64_t seq, uint64_t generation, size_t area_offset, int layer,
                       std::span<const KvPageOut> out, std::chrono::milliseconds timeout) const;

 private:
  std::span<std::byte> area_;
  KvLayout layout_;
};

}  // namespace recur::transfer
