#include "transfer/ucx_known_faults.h"

#include <fmt/format.h>

#include <cctype>

#include "transfer/ucx_defaults.h"

namespace recur::transfer {

namespace {

// UCX's boolean spellings (ucs_config_sscanf_bool): y, yes, on, 1 are true.
bool ucx_true(std::string_view v) {
  std::string lower(v);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  return lower == "y" || lower == "yes" || lower == "on" || lower == "1";
}

}  // namespace

std::optional<std::string> ucx_printed_setting(std::string_view printed, std::string_view name) {
  const std::string key = fmt::format("UCX_{}=", name);
  size_t at = 0;
  while (at < printed.size()) {
    size_t end = printed.find('\n', at);
    if (end == std::string_view::npos) end = printed.size();
    const std::string_view line = printed.substr(at, end - at);
    if (line.starts_with(key)) return std::string(line.substr(key.size()));
    at = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> ucx_proto_refusal(UcxVersion version, std::string_view proto_enable) {
  if (!version.before(1, 14) || !ucx_true(proto_enable)) return std::nullopt;
  return fmt::format(
      "UCX_PROTO_ENABLE={} is not supported with UCX {}.{}.{}: its new protocol layer overruns a stack array "
      "when it sends a short active message that asks for a reply (recur's blocks and flags), and the process "
      "aborts (\"stack smashing detected\"; fixed in UCX 1.14, openucx/ucx 12089b319a). Unset UCX_PROTO_ENABLE "
      "or set it to n, or use UCX 1.14 or later",
      proto_enable, version.major, version.minor, version.release);
}

std::optional<std::string> ucx_tcp_wireup_warning(UcxVersion version, const char* tls) {
  if (!version.before(1, 14) || !ucx_tls_may_use_tcp(tls)) return std::nullopt;
  return fmt::format(
      "UCX {}.{}.{}: a peer that dies while UCX is still connecting tcp back to it aborts this process (an "
      "assertion in ucp_request.c, removed in UCX 1.14, openucx/ucx 9ccaf31bb6); peers on this host over shared "
      "memory are not affected. Use UCX 1.14 or later where workers reach each other over tcp",
      version.major, version.minor, version.release);
}

}  // namespace recur::transfer
