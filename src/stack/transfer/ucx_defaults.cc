#include "transfer/ucx_defaults.h"

#include <string_view>

namespace recur::transfer {

namespace {

// Whether UCX_TLS (unset: every transport) lets UCX use tcp. "^a,b" excludes a and b.
bool tls_may_use_tcp(const char* tls) {
  if (tls == nullptr || *tls == '\0') return true;
  const std::string_view t(tls);
  const bool names_tcp = t.find("tcp") != std::string_view::npos;
  if (t.starts_with('^')) return !names_tcp;
  return names_tcp || t.find("all") != std::string_view::npos;
}

}  // namespace

std::vector<UcxSetting> ucx_tcp_defaults(const std::function<const char*(const char*)>& getenv) {
  static const UcxSetting kDefaults[] = {
      {"TX_SEG_SIZE", "64k"}, {"RX_SEG_SIZE", "64k"}, {"SNDBUF", "4m"}, {"RCVBUF", "4m"}};
  std::vector<UcxSetting> out;
  if (!tls_may_use_tcp(getenv("UCX_TLS"))) return out;
  for (const UcxSetting& d : kDefaults)
    if (getenv(("UCX_TCP_" + d.name).c_str()) == nullptr) out.push_back(d);
  return out;
}

}  // namespace recur::transfer
