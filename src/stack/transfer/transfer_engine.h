// TransferEngine: moves bytes between this process's registered memory and a peer's, in batches
// of asynchronous reads and writes, over shared memory (same host), TCP (any host) or UCX (any
// host; one-sided RMA over whatever UCX picks: shared memory, CMA, TCP, RDMA verbs; built with
// RECUR_WITH_UCX). The API
// follows the Mooncake transfer engine's shape: register memory, open a peer's segment, allocate
// a batch, submit requests, poll their status, free the batch. docs/transfer.md has the details.
//
//   auto engine = TransferEngine::create({.segment_name = "decode0", .listen = "0.0.0.0:0"});
//   void* buf = *engine->allocate_shared(1 << 20);        // peers on this host can map it
//   RegionInfo r = *engine->register_memory(buf, 1 << 20, "cpu:0");
//   // ... on the prefill side:
//   SegmentHandle peer = *engine->open_segment("decode0");           // or "host:port/decode0"
//   BatchId b = *engine->allocate_batch(16);
//   std::vector<TransferRequest> reqs = {{TransferOpcode::kWrite, src, peer, r.segment_offset, 4096}};
//   engine->submit(b, reqs);
//   engine->wait_batch(b, 5s); engine->status(b, 0); engine->free_batch(b);
//
// A segment is the memory one engine registered. Its address space: region id in the top 24
// bits, byte offset within the region in the low 40 (segment_offset()), so a target offset says
// which region and where, and unregistering a region never moves another.
//
// Ordering: one transfer thread ("kv_transfer") executes requests in submission order; requests
// of one batch to one segment are applied in order, and once one of them fails the later ones to
// that segment fail too (so a ready flag is never stored after a failed data write).
//
// Emulated link (EngineOptions::link_bytes_per_s, knob transfer.link_mbps): each request occupies
// one serial link of this engine for length / rate seconds; the transfer thread sleeps until the
// link would have delivered it, so completions (and later requests, e.g. a ready flag) are never
// earlier than on a real link of that bandwidth. It lets one host show a network's transfer time.
//
// Thread-safety: every method may be called from any thread. Memory must stay registered (and
// allocated) while requests that touch it are pending.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace recur {
class Config;
}

namespace recur::transfer {

enum class TransferOpcode : uint8_t {
  kRead,       // target -> source
  kWrite,      // source -> target
  kStoreFlag,  // the uint64 at source -> target with one release store (8 bytes, 8-aligned)
};

using SegmentHandle = int32_t;
using BatchId = uint64_t;

// Optional trace tags: the transfer's zone gets seq/layer args and a step of flow `flow`.
struct TransferTrace {
  uint64_t flow = 0;  // 0 = no flow
  int64_t seq = -1;
  int32_t layer = -1;
};

struct TransferRequest {
  TransferOpcode opcode = TransferOpcode::kWrite;
  void* source = nullptr;      // local address inside registered memory
  SegmentHandle target = -1;   // from open_segment
  uint64_t target_offset = 0;  // segment offset (segment_offset())
  uint64_t length = 0;
  TransferTrace trace;
  // kWrite only, optional: the transfer thread stores checksum64(source bytes, checksum_seed)
  // here as it sends them, before any later request of the batch runs (a KV block's checksum,
  // computed off the caller's thread and, on shared memory, in the same pass as the copy).
  uint64_t* checksum_out = nullptr;
  uint64_t checksum_seed = 0;
};

enum class TransferState : uint8_t { kPending, kCompleted, kFailed };

struct TransferStatus {
  TransferState state = TransferState::kPending;
  uint64_t bytes = 0;       // transferred (completed requests)
  std::string error;        // failed requests: what, where (segment, offset, length) and why
  ErrorCode code = ErrorCode::kInternal;
};

struct RegionInfo {
  uint32_t id = 0;
  uint64_t segment_offset = 0;  // where the region starts in its segment's address space
  uint64_t length = 0;
  bool shared = false;  // backed by allocate_shared memory: peers on this host map it
};

inline constexpr int kRegionShift = 40;
inline constexpr uint64_t kMaxRegionBytes = uint64_t(1) << kRegionShift;
inline uint64_t segment_offset(uint32_t region, uint64_t offset) { return (uint64_t(region) << kRegionShift) | offset; }
inline uint32_t region_of(uint64_t segment_offset) { return uint32_t(segment_offset >> kRegionShift); }
inline uint64_t offset_in_region(uint64_t segment_offset) { return segment_offset & (kMaxRegionBytes - 1); }

struct EngineOptions {
  std::string segment_name;  // 1..64 of [A-Za-z0-9._-], unique among the engines of a host
  std::string listen;        // "host:port" to serve TCP peers (port 0 = any free); empty = none
  std::chrono::milliseconds timeout{5000};  // per TCP request and connect; a peer silent longer fails them
  // Emulated link bandwidth in bytes/s, 0 = unlimited (no emulation); else at least 1. See above.
  double link_bytes_per_s = 0;
  // The shared key TCP peers prove (HMAC-SHA256 challenge and response, docs/transfer.md "Peer
  // authentication"): a listener with one serves only clients that hold it, and a client with
  // one talks only to listeners that hold it. Empty: the listener is open to anyone who reaches
  // its port (a warning is logged).
  std::string peer_key;
  // Serve UCX peers too (transport ucx): regions are also registered with UCX and the listener
  // (required) answers an authenticated peer's UCX connect with the address and remote keys.
  // A build without UCX refuses it (kUnsupported). Opening "ucx://" segments needs no flag.
  bool ucx = false;
};

// Whether this build has the UCX transport (RECUR_WITH_UCX and libucx found).
bool ucx_transport_built();

// The knob transfer.link_mbps of `knobs` in bytes/s (MB = 10^6 bytes; 0 = unlimited).
Result<double> link_bytes_per_s(const Config& knobs);

class TransferEngine {
 public:
  static Result<std::unique_ptr<TransferEngine>> create(const EngineOptions& options);
  ~TransferEngine();
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  const std::string& segment_name() const;
  // The TCP port served (after listen with port 0, the one picked), or 0.
  int port() const;

  // Page-aligned, zeroed memory backed by a POSIX shared-memory object, so that peers on this
  // host can map it once it is registered. Freed by free_shared or with the engine. An engine
  // that serves UCX (options.ucx) has UCX allocate it instead (UCX's shared-memory transports
  // then write into it one-sidedly; recur's own shm transport cannot map it: peers use TCP or UCX).
  Result<void*> allocate_shared(size_t bytes);
  Status free_shared(void* addr);

  // Makes [addr, addr + bytes) a region of this segment: a source for local requests and a
  // target for peers (TCP always; shared memory if it lies inside allocate_shared memory).
  // `location` is a free-form tag ("cpu:0"). Regions must not overlap.
  Result<RegionInfo> register_memory(void* addr, size_t bytes, std::string_view location);
  Status unregister_memory(void* addr);
  std::vector<RegionInfo> regions() const;

  // A peer's segment: "name" (shared memory on this host), "host:port/name" (TCP) or
  // "ucx://host:port/name" (UCX; host:port is the peer's listener, which authenticates the setup).
  Result<SegmentHandle> open_segment(std::string_view name);
  // How requests to the segment travel: "shm", "tcp", or "ucx (<the transports UCX picked>)".
  Result<std::string> segment_transport(SegmentHandle segment);
  // The peer's regions as it reports them now.
  Result<std::vector<RegionInfo>> segment_regions(SegmentHandle segment);
  // Closes after the requests already submitted to it; later submits to it fail.
  Status close_segment(SegmentHandle segment);

  Result<BatchId> allocate_batch(size_t max_requests);
  // Queues the requests (all or none: a request with an unregistered source, an unknown segment
  // or too many for the batch rejects the call). Range errors on the target side fail that
  // request asynchronously.
  Status submit(BatchId batch, std::span<const TransferRequest> requests);
  Result<TransferStatus> status(BatchId batch, size_t index) const;
  // Waits until every submitted request of the batch is completed or failed; the first failure
  // (by index), or kTimeout if some are still pending after `timeout`.
  Status wait_batch(BatchId batch, std::chrono::milliseconds timeout) const;
  // kFailedPrecondition while requests are pending.
  Status free_batch(BatchId batch);

  class Impl;

 private:
  explicit TransferEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace recur::transfer
