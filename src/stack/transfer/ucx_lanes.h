// What an endpoint's description says (the text ucp_ep_print_info prints: lines like
// "#   lane[0]:  3:sysv/memory.0 md[2] -> md[2]/sysv/sysdev[255] am am_bw#0" and, per lane that
// carries RMA natively, "#   put[0]: 0..<short>..4294967296..<bcopy>..(inf)"). Pure text handling
// (no UCX calls), so it builds and is tested without libucx.
#pragma once

#include <string>
#include <string_view>

namespace recur::transfer {

// The transports/devices of the lanes, sorted and joined: "posix/memory.0, sysv/memory.0".
// The whole text when it has no lanes.
std::string ucx_lane_transports(std::string_view ep_info);

// Whether some lane carries RMA natively: UCX prints a put[N] protocol line for each such lane.
// None (UCX 1.13 over tcp: its log says ep_cfg rma_am(tcp/lo)) means UCX emulates every put and
// get with active messages the target applies. (The lanes' "rma_bw#N" marks do not tell: with
// UCP_FEATURE_AM tcp lanes get them, for rendezvous.)
bool ucx_lanes_have_rma(std::string_view ep_info);

}  // namespace recur::transfer
