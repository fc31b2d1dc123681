#include "mcp/path_guard.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace recur::mcp {

namespace fs = std::filesystem;

Result<std::string> confine_path(std::string_view root, std::string_view path, std::string_view what) {
  if (path.empty()) return invalid_argument("{}: empty path", what);
  if (path.find('\0') != std::string_view::npos) return invalid_argument("{}: the path holds a NUL byte", what);
  const fs::path base(root);
  fs::path p(path);
  if (p.is_relative()) p = base / p;
  std::error_code ec;
  // weakly_canonical resolves symlinks of the part that exists and normalizes the rest.
  fs::path resolved = fs::weakly_canonical(p, ec);
  if (ec) return invalid_argument("{}: '{}' cannot be resolved: {}", what, path, ec.message());
  auto [root_end, _] = std::mismatch(base.begin(), base.end(), resolved.begin(), resolved.end());
  if (root_end != base.end())
    return invalid_argument("{}: '{}' is outside the server's folder {} (paths must stay under it)", what, path,
                            base.string());
  return resolved.string();
}

}  // namespace recur::mcp
