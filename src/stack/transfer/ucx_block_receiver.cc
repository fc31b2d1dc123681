#include "transfer/ucx_block_receiver.h"

#include <array>
#include <atomic>
#include <cstring>
#include <span>
#include <string>

#include "core/log.h"
#include "transfer/ucx_am_wire.h"
#include "transfer/ucx_runtime.h"

namespace recur::transfer {

namespace {

// What an ack send keeps alive until UCX is done with it (the header and data are not copied).
struct UcxAckTicket {
  std::array<std::byte, kUcxAmAckHeaderBytes> header;
  std::string message;
};

// A rendezvous receive in flight: whom to acknowledge when the bytes are in place.
struct UcxReceiveTicket {
  UcxBlockReceiver* receiver = nullptr;
  ucp_ep_h reply = nullptr;
  uint64_t link = 0;
  uint64_t seq = 0;
};

ucs_status_t ucx_block_arrived(void* arg, const void* header, size_t header_length, void* data, size_t length,
                               const ucp_am_recv_param_t* param) {
  return static_cast<UcxBlockReceiver*>(arg)->on_block(header, header_length, data, length, param);
}

void ucx_block_received(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* t = static_cast<UcxReceiveTicket*>(user_data);
  t->receiver->received();
  if (status == UCS_ERR_CANCELED) {  // the worker is being destroyed: nobody to tell, nothing to send on
    ucp_request_free(request);
    delete t;
    return;
  }
  const Error why = ucx_error(ErrorCode::kIo, "receive of the block", status);
  t->receiver->complete(t->reply, t->link, t->seq, status == UCS_OK ? nullptr : &why);
  ucp_request_free(request);
  delete t;
}

void store_flag(std::byte* at, uint64_t value) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(at)).store(value, std::memory_order_release);
}

// Out-of-order state a link may hold: beyond it the sender is skipping numbers on purpose.
constexpr size_t kMaxOutOfOrderBlocks = 1 << 16;

void ucx_ack_sent(void* request, ucs_status_t, void* user_data) {
  delete static_cast<UcxAckTicket*>(user_data);
  ucp_request_free(request);
}

}  // namespace

Status UcxBlockReceiver::install() {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = kUcxAmBlockId;
  p.cb = ucx_block_arrived;
  p.arg = this;
  if (ucs_status_t s = ucp_worker_set_am_recv_handler(worker_, &p); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "active-message handler for blocks", s));
  return ok_status();
}

ucs_status_t UcxBlockReceiver::on_block(const void* header, size_t header_length, void* data, size_t length,
                                        const ucp_am_recv_param_t* param) {
  ucp_ep_h reply = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? param->reply_ep : nullptr;
  const std::span<const std::byte> h(static_cast<const std::byte*>(header), header_length);
  auto block = decode_ucx_am_block(h, length);
  if (!block) {
    // Acknowledged as sent, so the sender learns why; a rendezvous is dropped (its send completes).
    uint64_t link = 0, seq = 0;
    if (header_length == kUcxAmBlockHeaderBytes) {
      std::memcpy(&link, h.data() + 24, sizeof link);
      std::memcpy(&seq, h.data() + 32, sizeof seq);
    }
    ack(reply, link, seq, &block.error());
    return UCS_OK;
  }
  if (!links_.contains({reply, block->link}) && !make_room_for_link()) {
    const Error why(ErrorCode::kFailedPrecondition,
                    fmt::format("ucx block: link {} refused: {} links hold pending blocks (at most {})", block->link,
                                links_.size(), kMaxLinks));
    ack(reply, block->link, block->seq, &why);
    return UCS_OK;
  }
  LinkOrder& order = links_[{reply, block->link}];
  if (auto refused = refuse_sequence(order, block->link, block->seq)) {
    ack(reply, block->link, block->seq, &*refused);  // not done: its number is not the sender's to reuse
    return UCS_OK;
  }
  auto target = resolve_(block->region, block->offset, block->length);
  if (!target) {
    complete(reply, block->link, block->seq, &target.error());
    return UCS_OK;
  }
  const bool rendezvous = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
  if (block->kind == UcxAmKind::kStoreFlag) {
    if (rendezvous) {
      // A flag is one release store of 8 bytes: not a rendezvous receive, whose copy is not atomic.
      const Error why(ErrorCode::kInvalidArgument, "ucx block: store_flag sent by rendezvous, expected eager");
      complete(reply, block->link, block->seq, &why);
      return UCS_OK;
    }
    uint64_t value = 0;
    std::memcpy(&value, data, sizeof value);
    if (order.done_below != block->seq) {
      order.flags[block->seq] = {*target, value};  // an earlier block is still arriving
      return UCS_OK;
    }
    store_or_refuse_flag(reply, block->link, block->seq, {*target, value});
    return UCS_OK;
  }
  if (!rendezvous) {
    std::memcpy(*target, data, length);
    complete(reply, block->link, block->seq, nullptr);
    return UCS_OK;
  }
  auto* ticket = new UcxReceiveTicket{this, reply, block->link, block->seq};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.recv_am = ucx_block_received;
  p.user_data = ticket;
  ucs_status_ptr_t r = ucp_am_recv_data_nbx(worker_, data, *target, length, &p);
  if (!UCS_PTR_IS_PTR(r)) {  // done (or refused) at once: no callback comes
    const Error why = ucx_error(ErrorCode::kIo, "receive of the block", UCS_PTR_STATUS(r));
    complete(reply, block->link, block->seq, UCS_PTR_STATUS(r) == UCS_OK ? nullptr : &why);
    delete ticket;
  } else {
    ++receiving_;
  }
  return UCS_OK;
}

bool UcxBlockReceiver::make_room_for_link() {
  if (links_.size() < kMaxLinks) return true;
  std::erase_if(links_, [](const auto& entry) {
    const LinkOrder& o = entry.second;
    return o.done_above.empty() && o.flags.empty();
  });
  return links_.size() < kMaxLinks;
}

std::optional<Error> UcxBlockReceiver::refuse_sequence(const LinkOrder& order, uint64_t link, uint64_t seq) const {
  if (seq < order.done_below || order.done_above.contains(seq) || order.flags.contains(seq))
    return Error(ErrorCode::kInvalidArgument, fmt::format("ucx block: sequence {} of link {} was seen before", seq, link));
  if (order.done_above.size() + order.flags.size() >= kMaxOutOfOrderBlocks)
    return Error(ErrorCode::kInvalidArgument,
                 fmt::format("ucx block: link {} has {} blocks out of order (numbers skipped), at most {}", link,
                             order.done_above.size() + order.flags.size(), kMaxOutOfOrderBlocks));
  return std::nullopt;
}

std::optional<Error> UcxBlockReceiver::flag_refusal(const LinkOrder& order, uint64_t link, uint64_t seq) const {
  if (order.first_failed == 0 || order.first_failed > seq) return std::nullopt;
  return Error(ErrorCode::kFailedPrecondition,
               fmt::format("ucx block: store_flag not applied: block {} of link {} before it failed", order.first_failed,
                           link));
}

void UcxBlockReceiver::store_or_refuse_flag(ucp_ep_h reply, uint64_t link, uint64_t seq, const DeferredFlag& flag) {
  const std::optional<Error> why = flag_refusal(links_[{reply, link}], link, seq);
  if (!why) store_flag(flag.at, flag.value);
  complete(reply, link, seq, why ? &*why : nullptr);
}

void UcxBlockReceiver::complete(ucp_ep_h reply, uint64_t link, uint64_t seq, const Error* error) {
  LinkOrder& order = links_[{reply, link}];
  std::optional<Error> refused;  // a released flag's refusal, for the next round
  // Iterative, not recursive: a sender may line up thousands of flags behind one block.
  for (;;) {
    ack(reply, link, seq, error);
    if (error != nullptr && (order.first_failed == 0 || seq < order.first_failed)) order.first_failed = seq;
    order.done_above.insert(seq);
    while (order.done_above.erase(order.done_below) > 0) ++order.done_below;
    // A flag waiting for exactly this point goes now.
    auto waiting = order.flags.find(order.done_below);
    if (waiting == order.flags.end()) return;
    seq = waiting->first;
    const DeferredFlag flag = waiting->second;
    order.flags.erase(waiting);
    refused = flag_refusal(order, link, seq);
    if (!refused) store_flag(flag.at, flag.value);
    error = refused ? &*refused : nullptr;
  }
}

void UcxBlockReceiver::ack(ucp_ep_h reply, uint64_t link, uint64_t seq, const Error* error) {
  if (reply == nullptr) {
    if (error != nullptr) LOG_WARN("UCX block without a reply endpoint refused: {}", error->message());
    return;
  }
  auto* ticket = new UcxAckTicket{encode_ucx_am_ack_header(link, seq, error), ucx_am_ack_message(error)};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = ucx_ack_sent;
  p.user_data = ticket;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t r = ucp_am_send_nbx(reply, kUcxAmAckId, ticket->header.data(), ticket->header.size(),
                                       ticket->message.data(), ticket->message.size(), &p);
  if (!UCS_PTR_IS_PTR(r)) delete ticket;  // sent at once, or the sender is gone: nothing to tell
}

}  // namespace recur::transfer
