// One engine's UCX state (built only with RECUR_WITH_UCX): a UCP context (RMA, wakeup), one worker
// shared by the serving side and every UcxPeer, and the progress thread that alone calls the
// worker (UCX's single-thread mode: its multi-thread mode takes spin locks, which on a busy
// host stall for whole scheduler slices). Other threads hand it tasks (post, run); it runs them,
// drives completions, remote RMA emulation (over TCP, and over shared memory into memory UCX did
// not allocate, the target must progress) and wire-up, polls while traffic flows and otherwise
// sleeps on the worker's event fd.
//
// Links without native RMA (UCX 1.13 over tcp) send blocks as active messages instead of puts
// (ucx_am_wire.h): the runtime receives them into its regions (ucx_block_receiver.h) and routes
// the acks it gets back to the sending link.
//
// Serving: every region this engine registers is also mapped (ucp_mem_map; inside allocate()
// memory, with its mapping); connect_reply() packs the worker address and a remote key per region
// for a client that passed the TCP listener's handshake (frame.h kUcxConnect), so only key holders
// ever see an address or a key.
//
// UCX picks its transports at run time from UCX_TLS (unset: all it finds: here sm, cma, tcp; on a
// cluster also rc/dc verbs). UCX_NET_DEVICES narrows the devices.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "transfer/ucx_am_wire.h"
#include "transfer/ucx_block_receiver.h"

namespace recur::transfer {

// Something the progress thread looks after besides the worker: a UcxPeer's control connection
// (readable or hung up = the peer may be gone) and its request deadlines.
class UcxWatcher {
 public:
  virtual ~UcxWatcher() = default;
  virtual int watch_fd() const = 0;  // -1: none now
  virtual void on_fd_ready() = 0;
  virtual void on_tick(std::chrono::steady_clock::time_point now) = 0;
  // Requests in flight: the progress thread keeps polling instead of sleeping on the event fd.
  virtual bool busy() const { return false; }
};

// "UCX <what>: <status string>" as an error of `code`.
Error ucx_error(ErrorCode code, std::string_view what, ucs_status_t status);

// What `print` writes to a stream (UCX's *_print functions), as a string; empty if no stream.
std::string ucx_printed(const std::function<void(FILE*)>& print);

class UcxRuntime {
 public:
  static Result<std::unique_ptr<UcxRuntime>> create(const std::string& segment_name);
  ~UcxRuntime();  // stops the progress thread, unmaps, destroys the worker and context
  UcxRuntime(const UcxRuntime&) = delete;
  UcxRuntime& operator=(const UcxRuntime&) = delete;

  ucp_worker_h worker() const { return worker_; }

  // Zeroed memory that UCX allocates and maps at once (ucp_mem_map with UCP_MEM_MAP_ALLOCATE; the
  // engine's allocate_shared when it serves UCX). Why: UCX's shared-memory transports (posix,
  // sysv) can put into and get from memory they allocated, one-sidedly, with a memcpy by the
  // initiator; memory the caller allocated they can only map by registering, which they cannot,
  // so UCX then emulates every put and get with messages that the target's progress thread applies
  // (measured ~50x slower here, docs/transfer.md). Over TCP it changes nothing.
  Result<std::byte*> allocate(uint64_t bytes);
  // not_found if `addr` is not an allocate() address; failed_precondition while a region in it is mapped.
  Status free(std::byte* addr);
  bool owns(const std::byte* addr);

  // A region inside allocate() memory reuses that mapping (its remote key reaches the region);
  // other memory is registered with ucp_mem_map.
  Status map(uint32_t region, std::byte* addr, uint64_t length);
  void unmap(uint32_t region);
  // The kUcxConnect reply (ucx_wire.h) for the regions mapped now.
  Result<std::vector<std::byte>> connect_reply();

  // Runs `task` on the progress thread, soon (in posting order).
  void post(std::function<void()> task);
  // Runs `task` there and waits for it; on the progress thread itself, runs it now. Fails
  // (kFailedPrecondition) once the runtime is stopping, as nothing would run it.
  Status run(const std::function<Status()>& task);
  // Ends the progress thread and runs what was posted before; later tasks are refused (post
  // drops them, run fails). The destructor calls it; idempotent.
  void stop();
  bool on_progress_thread() const { return std::this_thread::get_id() == progress_.get_id(); }

  // Acks of blocks sent as active messages (ucx_am_wire.h) reach the sink registered under their
  // link id; an ack for no sink (a link closed since) is dropped. Progress thread only.
  uint64_t add_ack_sink(std::function<void(const UcxAmAck&)> sink);
  void remove_ack_sink(uint64_t link);

  void add_watcher(UcxWatcher* w);
  void remove_watcher(UcxWatcher* w);  // after it returns, the progress thread no longer calls w
  bool watching(const UcxWatcher* w);


 private:
  struct Mapped {
    std::byte* addr = nullptr;
    uint64_t length = 0;
    ucp_mem_h memh = nullptr;
    bool own_memh = true;  // false: the memh of an allocation (allocations_)
  };
  struct Allocation {
    uint64_t length = 0;
    ucp_mem_h memh = nullptr;
  };
  // The allocation that holds [addr, addr + length), or nullptr. Under map_mu_.
  const Allocation* allocation_of(const std::byte* addr, uint64_t length) const;
  UcxRuntime() = default;
  void progress_loop();
  Status install_am_handlers();  // blocks (UcxBlockReceiver) and acks
  // Where [offset, offset + length) of mapped region `region` is; the registry's errors.
  Result<std::byte*> resolve_block(uint32_t region, uint64_t offset, uint64_t length);
  bool run_tasks();  // true if there were any
  // Queues `task` unless the runtime is stopping (then false: it will never run).
  bool enqueue(std::function<void()> task);
  bool busy();       // a watcher's requests or a block receive in flight

  std::string segment_name_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::vector<std::byte> address_;  // the worker's, taken once
  std::mutex task_mu_;
  std::deque<std::function<void()>> tasks_;
  std::mutex map_mu_;
  std::map<uint32_t, Mapped> mapped_;
  std::map<const std::byte*, Allocation> allocations_;  // by address
  std::unique_ptr<UcxBlockReceiver> receiver_;
  std::map<uint64_t, std::function<void(const UcxAmAck&)>> ack_sinks_;  // the progress thread's
  uint64_t next_link_ = 0;  // 0: not drawn yet
  std::mutex watch_mu_;
  std::vector<UcxWatcher*> watchers_;
  std::atomic<bool> stopping_{false};
  std::thread progress_;
};

}  // namespace recur::transfer
