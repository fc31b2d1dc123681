#include "transfer/ucx_peer.h"

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "transfer/frame_io.h"
#include "transfer/ucx_am_wire.h"
#include "transfer/ucx_lanes.h"
#include "transfer/ucx_wire.h"

namespace recur::transfer {

// One peer's connection as the progress thread holds it. Everything but the atomics is the
// progress thread's alone (UCX callbacks run there too).
class UcxLink final : public UcxWatcher, public std::enable_shared_from_this<UcxLink> {
 public:
  struct Op {
    RequestRef ref;
    FrameOp op = FrameOp::kWrite;
    uint32_t region = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::byte* local = nullptr;
    std::chrono::steady_clock::time_point deadline;
    bool flushed = false;  // a flag whose preceding flush completed
    // Sent as an active message (am_blocks_): complete once both the send and the ack are.
    bool am = false;
    bool sent = false;
    bool acked = false;
    uint64_t block_seq = 0;  // its number among the link's blocks (the ack names it)
  };

  UcxLink(UcxRuntime& runtime, std::string label, std::string segment, std::chrono::milliseconds timeout)
      : runtime_(runtime), label_(std::move(label)), segment_(std::move(segment)), timeout_(timeout) {}

  Status install(const UcxConnectReply& reply, UniqueFd control);
  void enqueue(Op op);
  void break_connection(const Error& why);
  std::string transports();

  // UCX callbacks.
  void on_done(uint64_t id, ucs_status_t status);
  void on_flushed(ucs_status_t status, std::vector<uint64_t> covered, bool for_flag);
  void on_block_sent(uint64_t id, ucs_status_t status);
  void on_ack(const UcxAmAck& ack);

  int watch_fd() const override { return control_.get(); }
  void on_fd_ready() override;
  void on_tick(std::chrono::steady_clock::time_point now) override;
  bool busy() const override { return !in_flight_.empty() || !queue_.empty(); }

  std::atomic<bool> connected{false};
  std::atomic<size_t> pending{0};  // queued or in flight

 private:
  struct RemoteRegion {
    uint64_t base = 0;
    uint64_t length = 0;
    ucp_rkey_h rkey = nullptr;
  };
  void pump();
  bool issue(Op& op);  // false: the queue must wait (a flag's flush, or acks, under way)
  void issue_block(Op& op);  // as an active message
  // Removes a request from in_flight_ (and from the unacknowledged blocks); nullopt if not there.
  std::optional<Op> take(uint64_t id);
  // Flushes the endpoint: completes the puts issued so far (unflushed_) when it completes;
  // for_flag: the queue's head (a flag) may go then. False if the connection broke.
  bool flush(bool for_flag);
  void finish(const Op& op, const Error* why);
  std::string where(const Op& op) const;
  Result<std::pair<uint64_t, ucp_rkey_h>> resolve(const Op& op) const;

  UcxRuntime& runtime_;
  std::string label_;
  std::string segment_;  // the peer's segment name (errors say it, as its registry would)
  std::chrono::milliseconds timeout_;
  UniqueFd control_;
  ucp_ep_h ep_ = nullptr;
  std::map<uint32_t, RemoteRegion> regions_;
  std::deque<Op> queue_;           // not issued yet, in order
  bool flushing_ = false;          // the queue's head is a flag waiting for its flush
  std::map<uint64_t, Op> in_flight_;
  std::vector<uint64_t> unflushed_;  // puts issued (in in_flight_) that no flush covers yet
  uint64_t next_id_ = 1;
  // No native RMA on the endpoint's lanes (UCX 1.13 over tcp emulates puts with messages the
  // target applies): writes and flags go as active messages (ucx_am_wire.h), reads stay gets.
  bool am_blocks_ = false;
  uint64_t link_id_ = 0;           // the runtime's ack sink for this link
  size_t blocks_unacked_ = 0;      // blocks in in_flight_
  bool awaiting_acks_ = false;     // the queue's head (a read) waits for blocks_unacked_ == 0
  uint64_t next_block_seq_ = 1;    // blocks are numbered 1, 2, 3... per link (ucx_block_receiver.h)
  std::map<uint64_t, uint64_t> block_ids_;  // block number -> request id, while in flight
};

namespace {

// What a UCX callback needs: who to tell.
struct UcxTicket {
  std::shared_ptr<UcxLink> link;
  uint64_t id = 0;
};
// A block sent as an active message: UCX reads the header (and a flag's value) until the send completes.
struct UcxBlockTicket {
  std::shared_ptr<UcxLink> link;
  uint64_t id = 0;
  std::array<std::byte, kUcxAmBlockHeaderBytes> header{};
  uint64_t flag = 0;
};
struct UcxFlushTicket {
  std::shared_ptr<UcxLink> link;
  std::vector<uint64_t> covered;  // the puts it completes
  bool for_flag = false;
};

void ucx_op_done(void* request, ucs_status_t status, void* user_data) {
  auto* t = static_cast<UcxTicket*>(user_data);
  t->link->on_done(t->id, status);
  ucp_request_free(request);
  delete t;
}

void ucx_flushed(void* request, ucs_status_t status, void* user_data) {
  auto* t = static_cast<UcxFlushTicket*>(user_data);
  t->link->on_flushed(status, std::move(t->covered), t->for_flag);
  ucp_request_free(request);
  delete t;
}

void ucx_block_sent(void* request, ucs_status_t status, void* user_data) {
  auto* t = static_cast<UcxBlockTicket*>(user_data);
  t->link->on_block_sent(t->id, status);
  ucp_request_free(request);
  delete t;
}

void ucx_free_request(void* request, ucs_status_t, void*) { ucp_request_free(request); }

// Blocks from this size go by rendezvous: the target receives them in place (no copy through
// UCX's buffers); smaller ones eager, copied in place by the target's handler.
constexpr uint64_t kUcxRendezvousFrom = 64 * 1024;

std::string ucx_ep_info(ucp_ep_h ep) {
  return ucx_printed([ep](FILE* out) { ucp_ep_print_info(ep, out); });
}

const char* ucx_op_name(FrameOp op) {
  return op == FrameOp::kRead ? "read" : op == FrameOp::kWrite ? "write" : "store_flag";
}

}  // namespace

Status UcxLink::install(const UcxConnectReply& reply, UniqueFd control) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.address = reinterpret_cast<const ucp_address_t*>(reply.worker_address.data());
  // Not UCP_ERR_HANDLING_MODE_PEER: in UCX 1.13 it rules out the shared-memory transports (they
  // cannot detect a dead peer), leaving TCP. The control connection tells us instead.
  p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucp_ep_h ep = nullptr;
  if (ucs_status_t s = ucp_ep_create(runtime_.worker(), &p, &ep); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kFailedPrecondition, fmt::format("endpoint to {}", label_), s));
  ep_ = ep;
  for (const UcxRegionKey& r : reply.regions) {
    ucp_rkey_h rkey = nullptr;
    if (ucs_status_t s = ucp_ep_rkey_unpack(ep, r.rkey.data(), &rkey); s != UCS_OK) {
      const Error why = ucx_error(ErrorCode::kFailedPrecondition, fmt::format("remote key of {} region {}", label_, r.id), s);
      break_connection(why);
      return unexpected(why);
    }
    regions_[r.id] = {r.base, r.length, rkey};
  }
  // Decided per endpoint from the lanes UCX picked (ucx_lanes.h): shared memory and RDMA keep
  // one-sided puts; a link without RMA lanes sends blocks as active messages.
  am_blocks_ = !ucx_lanes_have_rma(ucx_ep_info(ep));
  if (am_blocks_) {
    link_id_ = runtime_.add_ack_sink([weak = weak_from_this()](const UcxAmAck& ack) {
      if (auto self = weak.lock()) self->on_ack(ack);
    });
  }
  control_ = std::move(control);
  connected.store(true);
  runtime_.add_watcher(this);
  return ok_status();
}

void UcxLink::break_connection(const Error& why) {
  runtime_.remove_watcher(this);
  connected.store(false);
  if (ep_ != nullptr) {
    for (auto& [id, r] : regions_) ucp_rkey_destroy(r.rkey);
    regions_.clear();
    // Forced: the peer may be gone; requests in flight end through their callbacks (ignored now).
    ucp_request_param_t close{};
    close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK;
    close.flags = UCP_EP_CLOSE_FLAG_FORCE;
    close.cb.send = ucx_free_request;
    (void)ucp_ep_close_nbx(ep_, &close);  // freed by its callback, or already done
    ep_ = nullptr;
  }
  control_.reset();
  flushing_ = false;
  unflushed_.clear();
  if (link_id_ != 0) runtime_.remove_ack_sink(link_id_);
  link_id_ = 0;
  blocks_unacked_ = 0;
  awaiting_acks_ = false;
  block_ids_.clear();
  std::map<uint64_t, Op> failed;
  failed.swap(in_flight_);
  std::deque<Op> queued;
  queued.swap(queue_);
  for (auto& [id, op] : failed) finish(op, &why);
  for (Op& op : queued) finish(op, &why);
}

std::string UcxLink::where(const Op& op) const {
  return fmt::format("{}: {} region {} offset {} length {}", label_, ucx_op_name(op.op), op.region, op.offset, op.length);
}

void UcxLink::finish(const Op& op, const Error* why) {
  if (why == nullptr) {
    op.ref.batch->complete(op.ref.index, op.length);
  } else {
    op.ref.batch->mark_segment_failed(op.ref.segment);
    op.ref.batch->fail(op.ref.index, Error(why->code(), fmt::format("{}: {}", where(op), why->message())));
  }
  pending.fetch_sub(1);
}

Result<std::pair<uint64_t, ucp_rkey_h>> UcxLink::resolve(const Op& op) const {
  auto it = regions_.find(op.region);
  if (it == regions_.end())
    return not_found("segment {}: region {} (offset {}, length {}) is not registered", segment_, op.region, op.offset,
                     op.length);
  const RemoteRegion& r = it->second;
  if (op.offset > r.length || op.length > r.length - op.offset)
    return invalid_argument("segment {}: region {}: offset {} + length {} is past its end ({} bytes)", segment_,
                            op.region, op.offset, op.length, r.length);
  return std::pair(r.base + op.offset, r.rkey);
}

void UcxLink::enqueue(Op op) {
  if (ep_ == nullptr) {
    const Error why(ErrorCode::kFailedPrecondition, "peer gone: the connection broke before the request ran");
    return finish(op, &why);
  }
  queue_.push_back(op);
  pump();
}

void UcxLink::pump() {
  while (!queue_.empty() && !flushing_ && ep_ != nullptr) {
    if (!issue(queue_.front())) return;
    queue_.pop_front();
  }
  // Nothing more to issue now: one flush completes the puts issued so far (a flush per put
  // would cost a round trip each).
  if (!unflushed_.empty() && ep_ != nullptr) (void)flush(false);
}

bool UcxLink::flush(bool for_flag) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = ucx_flushed;
  auto* ticket = new UcxFlushTicket{shared_from_this(), std::move(unflushed_), for_flag};
  unflushed_.clear();
  p.user_data = ticket;
  if (for_flag) flushing_ = true;
  ucs_status_ptr_t r = ucp_ep_flush_nbx(ep_, &p);
  if (UCS_PTR_IS_PTR(r)) return true;
  std::vector<uint64_t> covered = std::move(ticket->covered);
  delete ticket;
  on_flushed(UCS_PTR_STATUS(r), std::move(covered), for_flag);
  return ep_ != nullptr;
}

bool UcxLink::issue(Op& op) {
  if (op.ref.batch->segment_failed(op.ref.segment)) {
    const Error why(ErrorCode::kFailedPrecondition, "not run: an earlier request of this batch to the segment failed");
    finish(op, &why);
    return true;
  }
  auto target = resolve(op);
  if (!target) {
    finish(op, &target.error());
    return true;
  }
  const auto [remote, rkey] = *target;
  if (am_blocks_) {
    // A read must see the blocks before it: it waits for their acks. A flag need not: the target
    // stores it only once every earlier block of this link is in place (ucx_block_receiver.h).
    if (op.op == FrameOp::kRead && blocks_unacked_ > 0) {
      awaiting_acks_ = true;
      return false;  // take() pumps again once the last ack is in
    }
    if (op.op != FrameOp::kRead) {
      issue_block(op);
      return true;
    }
  }
  if (op.op == FrameOp::kStoreFlag && !op.flushed) {
    // The flag publishes the block: every earlier write of this peer must be at the target first.
    (void)flush(true);
    return false;  // on_flushed marks it flushed and pumps again
  }
  const uint64_t id = next_id_++;
  in_flight_[id] = op;
  if (op.op == FrameOp::kRead) {
    auto* ticket = new UcxTicket{shared_from_this(), id};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = ucx_op_done;
    p.user_data = ticket;
    ucs_status_ptr_t r = ucp_get_nbx(ep_, op.local, op.length, remote, rkey, &p);  // complete = the bytes are here
    if (!UCS_PTR_IS_PTR(r)) {  // done (or refused) at once: no callback comes
      delete ticket;
      on_done(id, UCS_PTR_STATUS(r));
    }
    return true;
  }
  // A put completes locally (the source may be reused), not at the target: a later flush
  // completes once the bytes are in the peer's memory, and only then does the request.
  const void* source = op.local;
  uint64_t* flag_copy = nullptr;
  if (op.op == FrameOp::kStoreFlag) {
    // UCX may read the 8 bytes after ucp_put_nbx returns; the caller's source may change by then.
    flag_copy = new uint64_t(std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(op.local)).load(std::memory_order_acquire));
    source = flag_copy;
  }
  ucp_request_param_t put{};
  if (flag_copy != nullptr) {
    put.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    put.cb.send = [](void* request, ucs_status_t, void* copy) {
      delete static_cast<uint64_t*>(copy);
      ucp_request_free(request);
    };
    put.user_data = flag_copy;
  }
  ucs_status_ptr_t r = ucp_put_nbx(ep_, source, op.length, remote, rkey, &put);
  if (UCS_PTR_IS_PTR(r)) {
    if (flag_copy == nullptr) ucp_request_free(r);  // UCX releases it when done
  } else {
    delete flag_copy;
    if (UCS_PTR_STATUS(r) != UCS_OK) {
      on_done(id, UCS_PTR_STATUS(r));
      return true;
    }
  }
  unflushed_.push_back(id);
  return true;
}

void UcxLink::issue_block(Op& op) {
  const uint64_t id = next_id_++;
  op.am = true;
  op.block_seq = next_block_seq_++;
  in_flight_[id] = op;
  block_ids_[op.block_seq] = id;
  ++blocks_unacked_;
  const bool flag = op.op == FrameOp::kStoreFlag;
  auto* ticket = new UcxBlockTicket{shared_from_this(), id, {}, 0};
  ticket->header = encode_ucx_am_block(
      {flag ? UcxAmKind::kStoreFlag : UcxAmKind::kWrite, op.region, op.offset, op.length, link_id_, op.block_seq});
  const void* source = op.local;
  if (flag) {
    // UCX may read the 8 bytes after ucp_am_send_nbx returns; the caller's source may change by then.
    ticket->flag = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(op.local)).load(std::memory_order_acquire);
    source = &ticket->flag;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = ucx_block_sent;
  p.user_data = ticket;
  // REPLY: the target acknowledges on the endpoint the block came by.
  p.flags = UCP_AM_SEND_FLAG_REPLY |
            (flag ? UCP_AM_SEND_FLAG_EAGER : op.length >= kUcxRendezvousFrom ? UCP_AM_SEND_FLAG_RNDV : 0);
  ucs_status_ptr_t r = ucp_am_send_nbx(ep_, kUcxAmBlockId, ticket->header.data(), ticket->header.size(), source,
                                       op.length, &p);
  if (!UCS_PTR_IS_PTR(r)) {  // sent (or refused) at once: no callback comes
    delete ticket;
    on_block_sent(id, UCS_PTR_STATUS(r));
  }
}

std::optional<UcxLink::Op> UcxLink::take(uint64_t id) {
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return std::nullopt;  // already failed (connection broken)
  Op op = it->second;
  in_flight_.erase(it);
  if (op.am) block_ids_.erase(op.block_seq);
  if (op.am && --blocks_unacked_ == 0 && awaiting_acks_) {
    awaiting_acks_ = false;
    // Issuing from inside a callback is avoided: the next task round does it.
    runtime_.post([self = shared_from_this()] { self->pump(); });
  }
  return op;
}

void UcxLink::on_block_sent(uint64_t id, ucs_status_t status) {
  if (status != UCS_OK) return on_done(id, status);
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return;
  it->second.sent = true;
  if (it->second.acked) finish(*take(id), nullptr);
}

void UcxLink::on_ack(const UcxAmAck& ack) {
  auto block = block_ids_.find(ack.seq);
  if (block == block_ids_.end()) return;  // failed meanwhile (timeout, broken connection)
  const uint64_t id = block->second;
  auto it = in_flight_.find(id);
  if (it == in_flight_.end()) return;
  if (ack.error) {
    // The target stores no later flag of this link (a flag never covers bad data): the next
    // request reconnects, on a new link.
    finish(*take(id), &*ack.error);
    runtime_.post([self = shared_from_this(), why = *ack.error] { self->break_connection(why); });
    return;
  }
  it->second.acked = true;
  if (it->second.sent) finish(*take(id), nullptr);
}

void UcxLink::on_done(uint64_t id, ucs_status_t status) {
  std::optional<Op> taken = take(id);
  if (!taken) return;
  const Op op = *taken;
  if (status == UCS_OK) return finish(op, nullptr);
  const Error why = ucx_error(ErrorCode::kFailedPrecondition, "peer gone: request", status);
  finish(op, &why);
  // Later requests may have gone out already: the connection is not to be trusted.
  runtime_.post([self = shared_from_this(), why] { self->break_connection(why); });
}

void UcxLink::on_flushed(ucs_status_t status, std::vector<uint64_t> covered, bool for_flag) {
  for (uint64_t id : covered) on_done(id, status);
  if (status != UCS_OK) {
    const Error why = ucx_error(ErrorCode::kFailedPrecondition, "peer gone: flush", status);
    runtime_.post([self = shared_from_this(), why] { self->break_connection(why); });
    return;
  }
  if (!for_flag || !flushing_) return;  // !flushing_: the connection broke meanwhile
  flushing_ = false;
  if (!queue_.empty()) queue_.front().flushed = true;
  // Issuing from inside a callback is avoided: the next task round does it.
  runtime_.post([self = shared_from_this()] { self->pump(); });
}

void UcxLink::on_fd_ready() {
  char byte = 0;
  ssize_t n = ::recv(control_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  // The server says nothing after the connect reply: data, a close or a reset all mean it is gone.
  break_connection(Error(ErrorCode::kFailedPrecondition, n == 0 ? "peer gone: it closed the connection"
                                                                : "peer gone: its control connection broke"));
}

void UcxLink::on_tick(std::chrono::steady_clock::time_point now) {
  bool late = !queue_.empty() && queue_.front().deadline <= now;
  for (const auto& [id, op] : in_flight_) late = late || op.deadline <= now;
  if (late) break_connection(Error(ErrorCode::kTimeout, fmt::format("no completion within {} ms", timeout_.count())));
}

std::string UcxLink::transports() {
  if (ep_ == nullptr) return "(not connected)";
  const std::string lanes = ucx_lane_transports(ucx_ep_info(ep_));
  return am_blocks_ ? lanes + "; blocks as active messages" : lanes;
}

// ---- UcxPeer: the transfer thread's side ----

UcxPeer::UcxPeer(UcxRuntime& runtime, TcpAddress address, std::chrono::milliseconds timeout, std::string peer_key)
    : runtime_(runtime),
      address_(std::move(address)),
      label_(fmt::format("ucx://{}:{}/{}", address_.host, address_.port, address_.name)),
      timeout_(timeout),
      peer_key_(std::move(peer_key)) {}

Result<std::unique_ptr<UcxPeer>> UcxPeer::connect(UcxRuntime& runtime, const TcpAddress& address,
                                                  std::chrono::milliseconds timeout, std::string peer_key) {
  auto peer = std::unique_ptr<UcxPeer>(new UcxPeer(runtime, address, timeout, std::move(peer_key)));
  RECUR_RETURN_IF_ERROR(peer->reconnect());
  return peer;
}

UcxPeer::~UcxPeer() {
  if (!link_) return;
  const Error closed(ErrorCode::kFailedPrecondition, fmt::format("segment {} closed", label_));
  (void)runtime_.run([&] {
    link_->break_connection(closed);
    return ok_status();
  });
}

Status UcxPeer::reconnect() {
  if (link_) {
    (void)runtime_.run([&] {
      link_->break_connection(Error(ErrorCode::kFailedPrecondition, "peer gone: reconnecting"));
      return ok_status();
    });
  }
  auto fd = tcp_connect(address_.host, address_.port, timeout_);
  if (!fd)
    return make_error(fd.error().code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kFailedPrecondition,
                      "peer gone: {}: {}", label_, fd.error().message());
  // The address and keys come only over an authenticated connection.
  RECUR_RETURN_IF_ERROR(tcp_hello(fd->get(), address_.name, label_, peer_key_));
  RECUR_RETURN_IF_ERROR(send_frame(fd->get(), FrameOp::kUcxConnect, 0, 0, {}, label_));
  RECUR_ASSIGN_OR_RETURN(HandshakeFrame answer, receive_handshake_frame(fd->get(), label_));
  if (answer.header.op != FrameOp::kReply)
    return parse_error("{}: ucx_connect answered with a {} frame", label_, int(answer.header.op));
  auto reply = decode_ucx_connect_reply(answer.payload);
  if (!reply) return unexpected<Error>(reply.error().with_context(label_));
  auto link = std::make_shared<UcxLink>(runtime_, label_, address_.name, timeout_);
  RECUR_RETURN_IF_ERROR(runtime_.run([&] { return link->install(*reply, std::move(*fd)); }));
  known_regions_.clear();
  for (const UcxRegionKey& r : reply->regions) known_regions_.insert(r.id);
  link_ = std::move(link);
  return ok_status();
}

void UcxPeer::send(const RequestRef& ref, FrameOp op, uint32_t region, uint64_t offset, std::byte* local,
                   uint64_t length) {
  auto fail_now = [&](const Error& why) {
    ref.batch->mark_segment_failed(ref.segment);
    ref.batch->fail(ref.index, why);
  };
  if (!link_ || !link_->connected.load()) {
    if (Status s = reconnect(); !s) return fail_now(s.error());
  }
  // The peer may have registered the region after our table was made: ask once more.
  if (!known_regions_.contains(region)) {
    if (Status s = reconnect(); !s) return fail_now(s.error());
  }
  link_->pending.fetch_add(1);
  UcxLink::Op o{ref, op, region, offset, length, local, std::chrono::steady_clock::now() + timeout_, false};
  runtime_.post([link = link_, o] { link->enqueue(o); });
}

void UcxPeer::drain() {
  while (link_ && link_->pending.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

std::string UcxPeer::transports() {
  std::string out = "(not connected)";
  if (link_) {
    (void)runtime_.run([&] {
      out = link_->transports();
      return ok_status();
    });
  }
  return out;
}

}  // namespace recur::transfer
