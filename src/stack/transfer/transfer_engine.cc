#include "transfer/transfer_engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/knobs.h"
#include "trace/trace.h"
#include "transfer/batch.h"
#include "transfer/checksum.h"
#include "transfer/memory_registry.h"
#include "transfer/shm_segment.h"
#include "transfer/tcp_peer.h"
#include "transfer/tcp_server.h"
#if RECUR_HAVE_UCX
#include "transfer/ucx_peer.h"
#include "transfer/ucx_runtime.h"
#endif

namespace recur::transfer {

RECUR_KNOB(transfer_link_mbps,
           {.name = "transfer.link_mbps", .type = KnobType::kInt, .min = 0, .max = 1000000, .default_value = "0",
            .components = {"transfer:link"},
            .acts = KnobActs::kTransfer | KnobActs::kServe | KnobActs::kPython,
            .help = "emulated bandwidth (MB/s, 10^6 bytes) of the KV transfer engine's link: each request waits "
                    "(sleeping) until a link of this rate would have delivered it, which emulates the network to a "
                    "remote decode host on one machine; 0 = no emulation"});

bool ucx_transport_built() { return RECUR_HAVE_UCX != 0; }

namespace {

constexpr std::string_view kUcxScheme = "ucx://";

// "ucx://host:port/name" -> "host:port/name"; nullopt for other names.
std::optional<std::string_view> ucx_segment_address(std::string_view name) {
  if (!name.starts_with(kUcxScheme)) return std::nullopt;
  return name.substr(kUcxScheme.size());
}

}  // namespace

Result<double> link_bytes_per_s(const Config& knobs) {
  RECUR_ASSIGN_OR_RETURN(int64_t mbps, knobs.get_int("transfer.link_mbps"));
  return double(mbps) * 1e6;
}

class TransferEngine::Impl {
 public:
  using LinkClock = std::chrono::steady_clock;
  struct Segment {
    std::string name;
    std::unique_ptr<ShmPeer> shm;  // exactly one of shm, tcp, ucx
    std::unique_ptr<TcpPeer> tcp;
#if RECUR_HAVE_UCX
    std::unique_ptr<UcxPeer> ucx;
#endif
    bool connected() const {
#if RECUR_HAVE_UCX
      if (ucx) return true;
#endif
      return shm || tcp;
    }
    std::atomic<bool> open{true};
  };
  struct Work {
    std::shared_ptr<Batch> batch;
    size_t index = 0;
    TransferRequest request;
    bool close = false;  // close request.target after what was queued before
    // When submit queued it: the earliest the emulated link may start sending it.
    std::chrono::steady_clock::time_point queued{};
  };

  explicit Impl(const EngineOptions& options) : options(options), registry(options.segment_name) {}
  ~Impl();

  void run_transfers();
  void execute(Work& w);
  void execute_traced(trace::Zone& zone, Segment& seg, Work& w, uint32_t region, uint64_t offset);
  void execute_shm(Segment& seg, Work& w, uint32_t region, uint64_t offset);
  bool wait_on_link(LinkClock::time_point queued, uint64_t bytes);
  void fail_link_shutdown(Work& w);
  Result<Segment*> segment(SegmentHandle h) const;
  Result<std::shared_ptr<Batch>> batch(BatchId id) const;

  EngineOptions options;
  MemoryRegistry registry;
  std::unique_ptr<ShmOwner> shm;
  std::unique_ptr<TcpServer> server;
#if RECUR_HAVE_UCX
  // Created with the engine when it serves UCX (options.ucx), else by the first ucx:// open.
  std::mutex ucx_mu;
  std::unique_ptr<UcxRuntime> ucx;
  Result<UcxRuntime*> ucx_runtime();
#endif

  mutable std::mutex segments_mu;
  std::vector<std::unique_ptr<Segment>> segments;

  mutable std::mutex batches_mu;
  std::map<BatchId, std::shared_ptr<Batch>> batches;
  BatchId next_batch = 1;

  std::mutex queue_mu;
  std::condition_variable queue_cv;
  std::deque<Work> queue;
  bool stopping = false;
  std::thread worker;
  // When the emulated link (options.link_bytes_per_s) is next free; the transfer thread's alone.
  LinkClock::time_point link_free_at{};
};

namespace {

void engine_fail(const std::shared_ptr<Batch>& batch, size_t index, SegmentHandle s, const Error& e) {
  batch->mark_segment_failed(s);
  batch->fail(index, e);
}

const char* engine_opcode_name(TransferOpcode op) {
  switch (op) {
    case TransferOpcode::kRead: return "read";
    case TransferOpcode::kWrite: return "write";
    case TransferOpcode::kStoreFlag: return "store_flag";
  }
  return "?";
}

}  // namespace

TransferEngine::Impl::~Impl() {
  {
    std::lock_guard lock(queue_mu);
    stopping = true;
  }
  queue_cv.notify_all();
  if (worker.joinable()) worker.join();
  for (Work& w : queue) {
    if (!w.close)
      w.batch->fail(w.index, Error(ErrorCode::kFailedPrecondition,
                                   fmt::format("segment {}: engine shut down before the request ran", options.segment_name)));
  }
  segments.clear();  // TCP and UCX peers fail what is in flight
  server.reset();    // before the registry its threads read
  shm.reset();
#if RECUR_HAVE_UCX
  ucx.reset();  // after its peers and the server that answers with its keys
#endif
}

#if RECUR_HAVE_UCX
Result<UcxRuntime*> TransferEngine::Impl::ucx_runtime() {
  std::lock_guard lock(ucx_mu);
  if (!ucx) {
    RECUR_ASSIGN_OR_RETURN(ucx, UcxRuntime::create(options.segment_name));
  }
  return ucx.get();
}
#endif

void TransferEngine::Impl::run_transfers() {
  trace::set_thread_name("kv_transfer");
  for (;;) {
    Work w;
    {
      std::unique_lock lock(queue_mu);
      queue_cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) return;
      w = std::move(queue.front());
      queue.pop_front();
    }
    execute(w);
  }
}

void TransferEngine::Impl::execute(Work& w) {
  const TransferRequest& r = w.request;
  auto found = segment(r.target);
  if (w.close) {
    if (found) {
      Segment& seg = **found;
      if (seg.tcp) seg.tcp->drain();
      seg.tcp.reset();
      seg.shm.reset();
#if RECUR_HAVE_UCX
      if (seg.ucx) seg.ucx->drain();
      seg.ucx.reset();
#endif
    }
    return;
  }
  if (!found) return engine_fail(w.batch, w.index, r.target, found.error());
  Segment& seg = **found;
  uint32_t region = region_of(r.target_offset);
  uint64_t offset = offset_in_region(r.target_offset);
  auto where = [&] {
    return fmt::format("segment {}: {} region {} offset {} length {}", seg.name, engine_opcode_name(r.opcode), region,
                       offset, r.length);
  };
  if (w.batch->segment_failed(r.target))
    return engine_fail(w.batch, w.index, r.target,
                       Error(ErrorCode::kFailedPrecondition,
                             fmt::format("{}: not run: an earlier request of this batch to the segment failed", where())));
  if (!seg.connected())
    return engine_fail(w.batch, w.index, r.target,
                       Error(ErrorCode::kFailedPrecondition, fmt::format("{}: segment closed", where())));
  // Zone names are static: one zone for reads, one for writes and flags.
  if (r.opcode == TransferOpcode::kRead) {
    RECUR_ZONE("kv_transfer.read");
    return execute_traced(zone, seg, w, region, offset);
  }
  RECUR_ZONE("kv_transfer.send");
  execute_traced(zone, seg, w, region, offset);
}

// Emulated link: the request occupies it from max(queued, link_free_at) for bytes / rate seconds;
// sleeps (a condition-variable wait, woken early only by shutdown) until then. False on shutdown.
// The schedule starts from when the request was queued, not from when this thread got to it, so
// the thread's late wake-ups (timer slack, ~50-100 us) do not add up into a slower link.
bool TransferEngine::Impl::wait_on_link(LinkClock::time_point queued, uint64_t bytes) {
  if (options.link_bytes_per_s <= 0) return true;
  // Rounded up: the emulated delivery is never earlier than bytes / rate.
  const auto wire = std::chrono::ceil<LinkClock::duration>(
      std::chrono::duration<double>(double(bytes) / options.link_bytes_per_s));
  link_free_at = std::max(queued, link_free_at) + wire;
  std::unique_lock lock(queue_mu);
  return !queue_cv.wait_until(lock, link_free_at, [&] { return stopping; });
}

void TransferEngine::Impl::execute_traced(trace::Zone& zone, Segment& seg, Work& w, uint32_t region, uint64_t offset) {
  const TransferRequest& r = w.request;
  zone.arg("bytes", r.length);
  if (r.trace.seq >= 0) zone.arg("seq", r.trace.seq);
  if (r.trace.layer >= 0) zone.arg("layer", r.trace.layer);
  if (options.link_bytes_per_s > 0) zone.arg("link_mbps", options.link_bytes_per_s / 1e6);
  if (r.trace.flow != 0) RECUR_FLOW_STEP("kv_block", r.trace.flow);
  if (seg.shm) return execute_shm(seg, w, region, offset);
  if (r.checksum_out != nullptr)
    *r.checksum_out = checksum64({static_cast<const std::byte*>(r.source), r.length}, r.checksum_seed);
  // TCP completes on the receiver thread when the peer replies (UCX on its progress thread): send
  // once the emulated link has delivered, so neither the peer nor the completion sees the data earlier.
  if (!wait_on_link(w.queued, r.length)) return fail_link_shutdown(w);
  FrameOp op = r.opcode == TransferOpcode::kRead    ? FrameOp::kRead
               : r.opcode == TransferOpcode::kWrite ? FrameOp::kWrite
                                                    : FrameOp::kStoreFlag;
#if RECUR_HAVE_UCX
  if (seg.ucx) return seg.ucx->send({w.batch, w.index, r.target}, op, region, offset, static_cast<std::byte*>(r.source), r.length);
#endif
  seg.tcp->send({w.batch, w.index, r.target}, op, region, offset, static_cast<std::byte*>(r.source), r.length);
}

void TransferEngine::Impl::execute_shm(Segment& seg, Work& w, uint32_t region, uint64_t offset) {
  const TransferRequest& r = w.request;
  if (auto alive = seg.shm->check_alive(); !alive) return engine_fail(w.batch, w.index, r.target, alive.error());
  auto target = seg.shm->resolve(region, offset, r.length);
  if (!target) return engine_fail(w.batch, w.index, r.target, target.error());
  switch (r.opcode) {
    case TransferOpcode::kRead:
      std::memcpy(r.source, *target, r.length);
      break;
    case TransferOpcode::kWrite:
      if (r.checksum_out == nullptr) {
        std::memcpy(*target, r.source, r.length);
      } else {
        // Hash each chunk right after copying it, while it is in cache: one pass over memory.
        constexpr uint64_t kChunk = 64 * 1024;
        Checksum64Stream sum(r.checksum_seed);
        const auto* src = static_cast<const std::byte*>(r.source);
        for (uint64_t done = 0; done < r.length; done += kChunk) {
          uint64_t n = std::min(kChunk, r.length - done);
          std::memcpy(*target + done, src + done, n);
          sum.update({src + done, n});
        }
        *r.checksum_out = sum.digest();
      }
      break;
    case TransferOpcode::kStoreFlag: {
      uint64_t value = std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(r.source)).load(std::memory_order_relaxed);
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(*target)).store(value, std::memory_order_release);
      break;
    }
  }
  // Shared memory: the copy is part of the emulated wire time; complete when the link delivers.
  if (!wait_on_link(w.queued, r.length)) return fail_link_shutdown(w);
  w.batch->complete(w.index, r.length);
}

void TransferEngine::Impl::fail_link_shutdown(Work& w) {
  engine_fail(w.batch, w.index, w.request.target,
              Error(ErrorCode::kFailedPrecondition,
                    fmt::format("segment {}: engine shut down while the request was on the emulated link",
                                options.segment_name)));
}

Result<TransferEngine::Impl::Segment*> TransferEngine::Impl::segment(SegmentHandle h) const {
  std::lock_guard lock(segments_mu);
  if (h < 0 || size_t(h) >= segments.size())
    return not_found("segment handle {}: unknown (opened: {})", h, segments.size());
  return segments[size_t(h)].get();
}

Result<std::shared_ptr<Batch>> TransferEngine::Impl::batch(BatchId id) const {
  std::lock_guard lock(batches_mu);
  auto it = batches.find(id);
  if (it == batches.end()) return not_found("segment {}: batch {} is not allocated", options.segment_name, id);
  return it->second;
}

// ---- public API ----

TransferEngine::TransferEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TransferEngine::~TransferEngine() = default;

Result<std::unique_ptr<TransferEngine>> TransferEngine::create(const EngineOptions& options) {
  RECUR_RETURN_IF_ERROR(check_segment_name(options.segment_name));
  if (options.timeout.count() <= 0)
    return invalid_argument("segment {}: timeout {} ms, expected > 0", options.segment_name, options.timeout.count());
  // At least 1 byte/s keeps a request's wire time within the clock's range.
  if (!(options.link_bytes_per_s == 0 || (options.link_bytes_per_s >= 1 && std::isfinite(options.link_bytes_per_s))))
    return invalid_argument("segment {}: link_bytes_per_s {}, expected 0 (unlimited) or a finite rate >= 1",
                            options.segment_name, options.link_bytes_per_s);
  if (options.ucx && options.listen.empty())
    return invalid_argument("segment {}: serving UCX peers needs a listen address (they connect through it)",
                            options.segment_name);
  auto impl = std::make_unique<Impl>(options);
  RECUR_ASSIGN_OR_RETURN(impl->shm, ShmOwner::create(options.segment_name));
  UcxConnectAnswer ucx_connect;
  if (options.ucx) {
#if RECUR_HAVE_UCX
    RECUR_ASSIGN_OR_RETURN(UcxRuntime * rt, impl->ucx_runtime());
    ucx_connect = [rt] { return rt->connect_reply(); };
#else
    return make_error(ErrorCode::kUnsupported,
                      "segment {}: the ucx transport is not in this build (configure with libucx-dev installed and "
                      "-DRECUR_WITH_UCX=ON)", options.segment_name);
#endif
  }
  if (!options.listen.empty()) {
    RECUR_ASSIGN_OR_RETURN(TcpAddress at, parse_host_port(options.listen));
    auto server = TcpServer::start(at.host, at.port, options.segment_name, impl->registry, options.timeout,
                                    options.peer_key, std::move(ucx_connect));
    if (!server) return unexpected<Error>(server.error().with_context(fmt::format("segment {}", options.segment_name)));
    impl->server = std::move(*server);
  }
  impl->worker = std::thread([p = impl.get()] { p->run_transfers(); });
  return std::unique_ptr<TransferEngine>(new TransferEngine(std::move(impl)));
}

const std::string& TransferEngine::segment_name() const { return impl_->options.segment_name; }
int TransferEngine::port() const { return impl_->server ? impl_->server->port() : 0; }

Result<void*> TransferEngine::allocate_shared(size_t bytes) {
#if RECUR_HAVE_UCX
  // Serving UCX: UCX allocates it, so that its shared-memory transports reach it one-sidedly
  // (ucx_runtime.h allocate); recur's shm transport cannot map it then (peers use TCP or UCX).
  if (impl_->options.ucx) {
    RECUR_ASSIGN_OR_RETURN(std::byte * p, impl_->ucx->allocate(bytes));
    return static_cast<void*>(p);
  }
#endif
  RECUR_ASSIGN_OR_RETURN(std::byte * p, impl_->shm->allocate(bytes));
  return static_cast<void*>(p);
}

Status TransferEngine::free_shared(void* addr) {
#if RECUR_HAVE_UCX
  if (impl_->options.ucx && impl_->ucx->owns(static_cast<std::byte*>(addr)))
    return impl_->ucx->free(static_cast<std::byte*>(addr));
#endif
  return impl_->shm->free(addr);
}

Result<RegionInfo> TransferEngine::register_memory(void* addr, size_t bytes, std::string_view location) {
  std::optional<SharedBacking> backing = impl_->shm->find_backing(addr, bytes);
  RECUR_ASSIGN_OR_RETURN(LocalRegion r, impl_->registry.add(static_cast<std::byte*>(addr), bytes, location, backing));
  if (auto s = impl_->shm->publish(r); !s) {
    (void)impl_->registry.remove(addr);
    return unexpected<Error>(s.error());
  }
#if RECUR_HAVE_UCX
  if (impl_->options.ucx) {
    if (auto s = impl_->ucx->map(r.info.id, r.addr, r.info.length); !s) {
      impl_->shm->withdraw(r.info.id);
      (void)impl_->registry.remove(addr);
      return unexpected<Error>(s.error());
    }
  }
#endif
  return r.info;
}

Status TransferEngine::unregister_memory(void* addr) {
  RECUR_ASSIGN_OR_RETURN(LocalRegion r, impl_->registry.remove(addr));
  impl_->shm->withdraw(r.info.id);
#if RECUR_HAVE_UCX
  if (impl_->options.ucx) impl_->ucx->unmap(r.info.id);
#endif
  return ok_status();
}

std::vector<RegionInfo> TransferEngine::regions() const { return impl_->registry.list(); }

Result<SegmentHandle> TransferEngine::open_segment(std::string_view name) {
  auto seg = std::make_unique<Impl::Segment>();
  if (auto ucx_at = ucx_segment_address(name)) {
#if RECUR_HAVE_UCX
    RECUR_ASSIGN_OR_RETURN(TcpAddress at, parse_tcp_segment(*ucx_at));
    RECUR_RETURN_IF_ERROR(check_segment_name(at.name));
    RECUR_ASSIGN_OR_RETURN(UcxRuntime * rt, impl_->ucx_runtime());
    RECUR_ASSIGN_OR_RETURN(seg->ucx, UcxPeer::connect(*rt, at, impl_->options.timeout, impl_->options.peer_key));
#else
    return make_error(ErrorCode::kUnsupported,
                      "segment '{}': the ucx transport is not in this build (configure with libucx-dev installed "
                      "and -DRECUR_WITH_UCX=ON)", name);
#endif
  } else if (name.find('/') != std::string_view::npos) {
    RECUR_ASSIGN_OR_RETURN(TcpAddress at, parse_tcp_segment(name));
    RECUR_RETURN_IF_ERROR(check_segment_name(at.name));
    RECUR_ASSIGN_OR_RETURN(seg->tcp, TcpPeer::connect(at, impl_->options.timeout, impl_->options.peer_key));
  } else {
    RECUR_RETURN_IF_ERROR(check_segment_name(name));
    RECUR_ASSIGN_OR_RETURN(seg->shm, ShmPeer::open(std::string(name)));
  }
  seg->name = std::string(name);
  std::lock_guard lock(impl_->segments_mu);
  impl_->segments.push_back(std::move(seg));
  return SegmentHandle(impl_->segments.size() - 1);
}

Result<std::vector<RegionInfo>> TransferEngine::segment_regions(SegmentHandle segment) {
  RECUR_ASSIGN_OR_RETURN(Impl::Segment * seg, impl_->segment(segment));
  if (!seg->open.load()) return make_error(ErrorCode::kFailedPrecondition, "segment {}: closed", seg->name);
  std::string_view address = ucx_segment_address(seg->name).value_or(seg->name);
  if (address.find('/') == std::string::npos) {
    // A private view: the transfer thread's ShmPeer is its alone.
    RECUR_ASSIGN_OR_RETURN(auto view, ShmPeer::open(seg->name));
    return view->regions();
  }
  RECUR_ASSIGN_OR_RETURN(TcpAddress at, parse_tcp_segment(address));
  std::vector<RegionInfo> out;
  RECUR_ASSIGN_OR_RETURN(std::vector<RegionEntry> table, tcp_segment_regions(at, impl_->options.timeout, impl_->options.peer_key));
  for (const RegionEntry& e : table) out.push_back({e.id, segment_offset(e.id, 0), e.length, false});
  return out;
}

Result<std::string> TransferEngine::segment_transport(SegmentHandle segment) {
  RECUR_ASSIGN_OR_RETURN(Impl::Segment * seg, impl_->segment(segment));
  if (!seg->open.load()) return make_error(ErrorCode::kFailedPrecondition, "segment {}: closed", seg->name);
#if RECUR_HAVE_UCX
  if (seg->ucx) return fmt::format("ucx ({})", seg->ucx->transports());
#endif
  return std::string(seg->tcp ? "tcp" : "shm");
}

Status TransferEngine::close_segment(SegmentHandle segment) {
  RECUR_ASSIGN_OR_RETURN(Impl::Segment * seg, impl_->segment(segment));
  if (!seg->open.exchange(false)) return make_error(ErrorCode::kFailedPrecondition, "segment {}: already closed", seg->name);
  Impl::Work w;
  w.close = true;
  w.request.target = segment;
  {
    std::lock_guard lock(impl_->queue_mu);
    impl_->queue.push_back(std::move(w));
  }
  impl_->queue_cv.notify_one();
  return ok_status();
}

Result<BatchId> TransferEngine::allocate_batch(size_t max_requests) {
  if (max_requests == 0) return invalid_argument("segment {}: allocate_batch(0), expected at least 1", segment_name());
  std::lock_guard lock(impl_->batches_mu);
  BatchId id = impl_->next_batch++;
  impl_->batches[id] = std::make_shared<Batch>(max_requests);
  return id;
}

Status TransferEngine::submit(BatchId batch_id, std::span<const TransferRequest> requests) {
  RECUR_ASSIGN_OR_RETURN(std::shared_ptr<Batch> batch, impl_->batch(batch_id));
  for (size_t i = 0; i < requests.size(); ++i) {
    const TransferRequest& r = requests[i];
    auto context = [&] {
      return fmt::format("batch {} request {} ({} to segment handle {} offset {:#x} length {})", batch_id, i,
                         engine_opcode_name(r.opcode), r.target, r.target_offset, r.length);
    };
    if (r.length == 0 || r.source == nullptr)
      return invalid_argument("{}: expected a source address and a length > 0", context());
    if (r.opcode != TransferOpcode::kRead && r.opcode != TransferOpcode::kWrite && r.opcode != TransferOpcode::kStoreFlag)
      return invalid_argument("{}: unknown opcode {}", context(), int(r.opcode));
    if (r.checksum_out != nullptr && r.opcode != TransferOpcode::kWrite)
      return invalid_argument("{}: checksum_out is for writes only", context());
    if (r.opcode == TransferOpcode::kStoreFlag &&
        (r.length != 8 || reinterpret_cast<uintptr_t>(r.source) % 8 != 0 || r.target_offset % 8 != 0))
      return invalid_argument("{}: store_flag needs length 8 and 8-aligned source and target", context());
    if (region_of(r.target_offset) == 0)
      return invalid_argument("{}: target offset names region 0, expected a segment offset from the peer's regions",
                              context());
    if (auto s = impl_->registry.check_local(r.source, r.length); !s)
      return unexpected<Error>(s.error().with_context(context()));
    RECUR_ASSIGN_OR_RETURN(Impl::Segment * seg, impl_->segment(r.target));
    if (!seg->open.load())
      return make_error(ErrorCode::kFailedPrecondition, "{}: segment {} is closed", context(), seg->name);
  }
  RECUR_ASSIGN_OR_RETURN(size_t first, batch->reserve(requests.size()));
  {
    std::lock_guard lock(impl_->queue_mu);
    const auto queued = Impl::LinkClock::now();
    for (size_t i = 0; i < requests.size(); ++i) impl_->queue.push_back({batch, first + i, requests[i], false, queued});
  }
  impl_->queue_cv.notify_one();
  return ok_status();
}

Result<TransferStatus> TransferEngine::status(BatchId batch_id, size_t index) const {
  RECUR_ASSIGN_OR_RETURN(std::shared_ptr<Batch> batch, impl_->batch(batch_id));
  if (index >= batch->used())
    return invalid_argument("segment {}: batch {}: request {} not submitted ({} were)", segment_name(), batch_id, index,
                            batch->used());
  return batch->status(index);
}

Status TransferEngine::wait_batch(BatchId batch_id, std::chrono::milliseconds timeout) const {
  RECUR_ASSIGN_OR_RETURN(std::shared_ptr<Batch> batch, impl_->batch(batch_id));
  return batch->wait(timeout);
}

Status TransferEngine::free_batch(BatchId batch_id) {
  std::lock_guard lock(impl_->batches_mu);
  auto it = impl_->batches.find(batch_id);
  if (it == impl_->batches.end()) return not_found("segment {}: batch {} is not allocated", segment_name(), batch_id);
  if (size_t n = it->second->pending(); n > 0)
    return make_error(ErrorCode::kFailedPrecondition, "segment {}: batch {} has {} pending requests", segment_name(),
                      batch_id, n);
  impl_->batches.erase(it);
  return ok_status();
}

}  // namespace recur::transfer
