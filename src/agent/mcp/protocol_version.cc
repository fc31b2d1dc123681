#include "mcp/protocol_version.h"

#include <algorithm>

namespace recur::mcp {

using nlohmann::json;

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> v = {std::string(kStatelessVersion), "2025-11-25", "2025-06-18", "2025-03-26",
                                             "2024-11-05"};
  return v;
}

bool is_supported_version(std::string_view v) {
  const auto& all = supported_versions();
  return std::find(all.begin(), all.end(), v) != all.end();
}

std::string negotiate_session_version(std::string_view requested) {
  // The stateless revision has no handshake, so initialize never agrees to it.
  if (requested != kStatelessVersion && is_supported_version(requested)) return std::string(requested);
  return std::string(kLatestSessionVersion);
}

bool has_structured_content(std::string_view version) {
  // ISO dates compare as strings.
  return version >= std::string_view("2025-06-18");
}

namespace {

// The namespaced key, else the bare one; null when neither is there.
const json* meta_field(const json& meta, std::string_view name) {
  for (const std::string& key : {"io.modelcontextprotocol/" + std::string(name), std::string(name)})
    if (auto it = meta.find(key); it != meta.end()) return &*it;
  return nullptr;
}

}  // namespace

Result<std::optional<RequestMeta>> read_request_meta(const json& params) {
  if (!params.is_object()) return std::optional<RequestMeta>();
  auto m = params.find("_meta");
  if (m == params.end()) return std::optional<RequestMeta>();
  if (!m->is_object()) return invalid_argument("params._meta: expected an object");
  const json* version = meta_field(*m, "protocolVersion");
  if (version == nullptr) return std::optional<RequestMeta>();
  if (!version->is_string()) return invalid_argument("params._meta.protocolVersion: expected a string");
  RequestMeta out;
  out.protocol_version = version->get<std::string>();
  if (!is_supported_version(out.protocol_version))
    return unsupported("params._meta.protocolVersion: '{}' is not supported", out.protocol_version);
  const json* caps = meta_field(*m, "clientCapabilities");
  if (caps != nullptr && !caps->is_object())
    return invalid_argument("params._meta.clientCapabilities: expected an object");
  if (caps == nullptr && out.protocol_version == kStatelessVersion)
    return invalid_argument("params._meta: protocol {} requires io.modelcontextprotocol/clientCapabilities (an object)",
                            kStatelessVersion);
  if (caps != nullptr) out.client_capabilities = *caps;
  if (const json* info = meta_field(*m, "clientInfo")) out.client_info = *info;
  return std::optional<RequestMeta>(std::move(out));
}

}  // namespace recur::mcp
