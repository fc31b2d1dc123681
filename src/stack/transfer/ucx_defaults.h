// Settings recur gives UCX where the user did not (no UCX calls here, so it builds and is tested
// without libucx; ucx_runtime.cc applies them with ucp_config_modify).
//
// UCX 1.13 has no RMA lane on tcp: it emulates puts and gets with active messages, so larger
// segments and socket buffers mean fewer round trips per block (1.4-1.7x the default's GB/s for
// 1 MiB blocks here: docs/performance.md "KV transfer: shm, TCP and UCX").
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace recur::transfer {

struct UcxSetting {
  std::string name;   // as ucp_config_modify takes it: the transport's field ("TX_SEG_SIZE")
  std::string value;  // "64k"
};

// The tcp settings to apply, given the environment (`getenv`): none where UCX_TLS rules tcp out
// (UCX warns about a setting no transport reads), and none the user set (UCX_TCP_<name>).
std::vector<UcxSetting> ucx_tcp_defaults(const std::function<const char*(const char*)>& getenv);

}  // namespace recur::transfer
