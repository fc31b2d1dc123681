// Confines every path a tool receives to the server's root folder (its working directory):
// the path is resolved (symlinks followed, "." and ".." removed) as far as it exists, and must
// stay under the root. Absolute paths inside the root are fine; "../x", "/etc/passwd" and a
// symlink that leads out are rejected. Pure function over the file system; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace recur::mcp {

// The resolved absolute path, or kInvalidArgument naming `what` ("arguments.trace") and why.
// `root` must be absolute and already resolved (std::filesystem::canonical).
Result<std::string> confine_path(std::string_view root, std::string_view path, std::string_view what);

}  // namespace recur::mcp
