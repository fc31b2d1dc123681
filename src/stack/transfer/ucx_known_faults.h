// Faults of the UCX releases recur is built against that recur cannot work around in its own code
// (no UCX calls here, so it builds and is tested without libucx; ucx_runtime.cc applies it).
// Both were found in UCX 1.13.1 (Debian 12's libucx0, built with UCX's assertions on) and are
// fixed upstream in 1.14.0; docs/transfer.md "Known UCX faults" has the traces.
//
// - The new protocol layer (UCX_PROTO_ENABLE=y, experimental in 1.13) sends a short active
//   message with a user header and UCP_AM_SEND_FLAG_REPLY (recur's eager blocks and flags)
//   through a stack array of 3 iovs that it fills with 4 (am/eager_single.c; openucx/ucx
//   12089b319a): the stack is smashed and the process aborts. recur refuses that setting there.
// - A peer that dies while the target is still connecting a tcp endpoint back to it (UCX's
//   wire-up) fails that endpoint with the wire-up reply still queued, and purging it trips an
//   assertion in ucp_request_send_state_ff (ucp_request.c:684 "got REP message"; openucx/ucx
//   9ccaf31bb6 removed the assertion): the target aborts. Over shared memory (one host) there is
//   no such connection; over tcp recur can only warn.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace recur::transfer {

struct UcxVersion {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  bool before(unsigned at_major, unsigned at_minor) const {
    return major < at_major || (major == at_major && minor < at_minor);
  }
};

// The value of UCX_<name> in ucp_config_print's output ("UCX_PROTO_ENABLE=n" lines), or nullopt.
std::optional<std::string> ucx_printed_setting(std::string_view printed, std::string_view name);

// Why this UCX with this UCX_PROTO_ENABLE value (as printed) cannot carry recur's transfers, or nullopt.
std::optional<std::string> ucx_proto_refusal(UcxVersion version, std::string_view proto_enable);

// The warning for a UCX whose target aborts when a peer dies during a tcp wire-up, where
// UCX_TLS (`tls`, nullptr: unset) lets it use tcp; nullopt where that cannot happen.
std::optional<std::string> ucx_tcp_wireup_warning(UcxVersion version, const char* tls);

}  // namespace recur::transfer
