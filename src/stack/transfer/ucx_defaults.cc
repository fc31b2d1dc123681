#include "transfer/ucx_defaults.h"

#include <string_view>

namespace recur::transfer {

bool ucx_tls_may_use_tcp(const char* tls) {
  if (tls == nullptr || *tls == '\0') return true;
  const std::string_view t(tls);
  const bool names_tcp = t.find("tcp") != std::string_view::npos;
  if (t.starts_with('^')) return !names_tcp;
  return names_tcp || t.find("all") != std::string_view::npos;
}

std::vector<UcxSetting> ucx_tcp_defaults(const std::function<const char*(const char*)>& getenv) {
  struct Default {
    UcxSetting setting;
    const char* env;  // the variable a user sets it with
  };
  static const Default kDefaults[] = {{{"TX_SEG_SIZE", "64k"}, "UCX_TCP_TX_SEG_SIZE"},
                                      {{"RX_SEG_SIZE", "64k"}, "UCX_TCP_RX_SEG_SIZE"},
                                      {{"SNDBUF", "4m"}, "UCX_TCP_SNDBUF"},
                                      {{"RCVBUF", "4m"}, "UCX_TCP_RCVBUF"},
                                      {{"MAX_RNDV_RAILS", "1"}, "UCX_MAX_RNDV_RAILS"}};
  std::vector<UcxSetting> out;
  if (!ucx_tls_may_use_tcp(getenv("UCX_TLS"))) return out;
  for (const Default& d : kDefaults)
    if (getenv(d.env) == nullptr) out.push_back(d.setting);
  return out;
}

}  // namespace recur::transfer
