// Settings recur gives UCX where the user did not (no UCX calls here, so it builds and is tested
// without libucx; ucx_runtime.cc applies them with ucp_config_modify).
//
// UCX 1.13 has no RMA lane on tcp: recur sends blocks there as active messages (ucx_peer.h),
// large ones by rendezvous; larger segments and socket buffers mean fewer round trips per block
// (1.4-1.7x the default's GB/s for 1 MiB blocks here: docs/performance.md "KV transfer: shm, TCP
// and UCX"), and one rendezvous rail keeps UCX from opening a second tcp connection to each of the
// peer's interfaces, unreachable ones included (the endpoint then fails: "Destination is
// unreachable", seen across the network namespaces of serve_disagg_netns_ucx_test).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace recur::transfer {

struct UcxSetting {
  std::string name;   // as ucp_config_modify takes it: the transport's or UCP's field ("TX_SEG_SIZE")
  std::string value;  // "64k"
};

// Whether UCX_TLS (`tls`; nullptr or empty: unset, every transport) lets UCX use tcp. "^a,b"
// excludes a and b.
bool ucx_tls_may_use_tcp(const char* tls);

// The tcp settings to apply, given the environment (`getenv`): none where UCX_TLS rules tcp out
// (UCX warns about a setting no transport reads), and none the user set (UCX_TCP_<name>,
// UCX_MAX_RNDV_RAILS).
std::vector<UcxSetting> ucx_tcp_defaults(const std::function<const char*(const char*)>& getenv);

}  // namespace recur::transfer
