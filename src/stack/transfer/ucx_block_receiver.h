// The target side of the UCX transport's active-message path (ucx_am_wire.h; built only with
// RECUR_WITH_UCX): where the endpoint has no native RMA (UCX 1.13 over tcp), clients send each
// block as an active message instead of a put. The handler runs on the progress thread
// (ucx_runtime.h): it decodes the header, checks region, offset and length against this engine's
// own region table (a hostile or stale header never writes outside a region), and then
//   - eager data: copies it in place (a flag: one release store of the 8 bytes);
//   - rendezvous data: ucp_am_recv_data_nbx straight into the region at the offset (zero copy);
// and acknowledges to the sender's reply endpoint once the bytes are in place, or with the error.
// A header it cannot decode is acknowledged with the error too (link and sequence as sent).
//
// Ordering, so that senders need not wait: blocks of a link (reply endpoint and link id) carry
// sequence numbers 1, 2, 3...; a flag is stored only once every block of its link numbered
// below it is done (a rendezvous still receiving defers it), so the flag never overtakes its data
// however the rendezvous receives complete. Once a block of a link failed (or was refused), no
// later flag of that link is stored (a flag never covers bad data): the sender reconnects. The
// state per link is a counter and what completed out of order; a link with too much out of order
// (a hostile sender skipping numbers) is refused. Links are bounded too (kMaxLinks): when a new
// link finds the table full, the links with nothing pending are forgotten (a sender that comes
// back on a forgotten link has its later flags wait for numbers that never come: it times out and
// reconnects on a new link), and if none has nothing pending the new link is refused.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/status.h"

namespace recur::transfer {

class UcxBlockReceiver {
 public:
  // Where [offset, offset + length) of a region is in this process, or the error to acknowledge.
  using Resolve = std::function<Result<std::byte*>(uint32_t region, uint64_t offset, uint64_t length)>;
  UcxBlockReceiver(ucp_worker_h worker, Resolve resolve) : worker_(worker), resolve_(std::move(resolve)) {}
  // Installs the handler for kUcxAmBlockId on the worker (on the worker's thread).
  Status install();

  ucs_status_t on_block(const void* header, size_t header_length, void* data, size_t length,
                        const ucp_am_recv_param_t* param);
  // Acknowledges (link, seq) to `reply` (nullptr: the sender asked for no reply; nothing to do).
  void ack(ucp_ep_h reply, uint64_t link, uint64_t seq, const Error* error);
  // Acknowledges block `seq` of the link as done (applied or refused) and stores the flags that
  // were waiting for it.
  void complete(ucp_ep_h reply, uint64_t link, uint64_t seq, const Error* error);
  // Rendezvous receives in flight.
  size_t receiving() const { return receiving_; }
  // Links whose ordering state is held.
  size_t links() const { return links_.size(); }
  static constexpr size_t kMaxLinks = 4096;
  void received() { --receiving_; }

 private:
  ucp_worker_h worker_;
  struct DeferredFlag {
    std::byte* at = nullptr;
    uint64_t value = 0;
  };
  struct LinkOrder {
    uint64_t done_below = 1;              // every block numbered below is done
    std::set<uint64_t> done_above;        // done, numbered above done_below
    std::map<uint64_t, DeferredFlag> flags;  // waiting for done_below to reach their number
    uint64_t first_failed = 0;            // the lowest block refused or failed; 0: none
  };
  using LinkKey = std::pair<ucp_ep_h, uint64_t>;
  // Stores a flag whose earlier blocks are done, or refuses it after a failed one; then completes it.
  void store_or_refuse_flag(ucp_ep_h reply, uint64_t link, uint64_t seq, const DeferredFlag& flag);
  // Why flag `seq` must not be stored (an earlier block of its link failed), or nullopt.
  std::optional<Error> flag_refusal(const LinkOrder& order, uint64_t link, uint64_t seq) const;
  // Room for a link not seen before: forgets the links with nothing pending when the table is
  // full; false when every held link has something pending.
  bool make_room_for_link();
  // Why block `seq` of the link cannot be taken (seen before, or too much out of order), or nullopt.
  std::optional<Error> refuse_sequence(const LinkOrder& order, uint64_t link, uint64_t seq) const;

  Resolve resolve_;
  size_t receiving_ = 0;
  std::map<LinkKey, LinkOrder> links_;
};

}  // namespace recur::transfer
