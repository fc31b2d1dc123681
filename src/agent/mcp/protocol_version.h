// MCP protocol revisions the server speaks and how a request picks one (docs/mcp.md,
// "Protocol versions"):
//   - the initialize era (2024-11-05 .. 2025-11-25): `initialize` negotiates one version for the
//     session: the client's when supported, else the latest of that era;
//   - the 2026-07-28 era (SEP-2575, stateless): every request carries the version and the
//     client's capabilities in params._meta ("io.modelcontextprotocol/protocolVersion",
//     "io.modelcontextprotocol/clientCapabilities"; the bare keys "protocolVersion" and
//     "clientCapabilities" are accepted too), and `server/discover` replaces the handshake.
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace recur::mcp {

inline constexpr std::string_view kStatelessVersion = "2026-07-28";
inline constexpr std::string_view kLatestSessionVersion = "2025-11-25";

// Newest first; the first is the stateless revision.
const std::vector<std::string>& supported_versions();
bool is_supported_version(std::string_view v);

// The version `initialize` answers with for a client asking for `requested`.
std::string negotiate_session_version(std::string_view requested);

// True for revisions whose clients know structuredContent and outputSchema (2025-06-18 on).
bool has_structured_content(std::string_view version);

// What a request's params._meta declares.
struct RequestMeta {
  std::string protocol_version;
  nlohmann::json client_capabilities = nlohmann::json::object();
  nlohmann::json client_info;  // null when absent
};

// nullopt when the request carries no protocol version in _meta (the session's applies);
// an error (kInvalidArgument) for a malformed _meta or a missing clientCapabilities in a
// stateless request; kUnsupported for a version the server does not speak.
Result<std::optional<RequestMeta>> read_request_meta(const nlohmann::json& params);

}  // namespace recur::mcp
