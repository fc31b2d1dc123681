// The stdio transport: one JSON-RPC message per line on stdin, one per line on stdout, nothing
// else on stdout (logs go to stderr). A line over the size limit is skipped up to its newline
// without being held in memory, and answered with -32600. Not thread-safe.
#pragma once

#include <cstdio>
#include <string>

#include "mcp/server.h"

namespace recur::mcp {

// Reads `in` in chunks; lines longer than `max_bytes` come back as kTooLong (their bytes
// dropped). A last line without a newline is still a line.
class LineReader {
 public:
  enum class Kind { kLine, kTooLong, kEnd };
  LineReader(std::FILE* in, size_t max_bytes) : in_(in), max_bytes_(max_bytes) {}
  Kind next(std::string& line);

 private:
  std::FILE* in_;
  size_t max_bytes_;
};

// Serves until `in` ends; returns 0, or 1 if `out` could not be written.
int serve_stdio(Server& server, std::FILE* in, std::FILE* out);

}  // namespace recur::mcp
