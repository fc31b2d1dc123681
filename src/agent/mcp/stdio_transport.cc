#include "mcp/stdio_transport.h"

#include <fmt/format.h>

#include "core/log.h"

namespace recur::mcp {

LineReader::Kind LineReader::next(std::string& line) {
  line.clear();
  bool too_long = false, any = false;
  for (int c; (c = std::getc(in_)) != EOF;) {
    any = true;
    if (c == '\n') return too_long ? Kind::kTooLong : Kind::kLine;
    if (too_long) continue;
    if (line.size() >= max_bytes_) {
      too_long = true;
      line.clear();
      line.shrink_to_fit();
      continue;
    }
    line.push_back(static_cast<char>(c));
  }
  if (!any) return Kind::kEnd;
  return too_long ? Kind::kTooLong : Kind::kLine;
}

int serve_stdio(Server& server, std::FILE* in, std::FILE* out) {
  LineReader reader(in, server.limits().max_line_bytes);
  std::string line;
  for (LineReader::Kind k; (k = reader.next(line)) != LineReader::Kind::kEnd;) {
    std::optional<std::string> reply;
    if (k == LineReader::Kind::kTooLong) {
      reply = to_line(rpc_error(nullptr, rpc::kInvalidRequest,
                                fmt::format("request: over the limit of {} bytes per message", server.limits().max_line_bytes)));
    } else {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are not messages
      reply = server.handle_line(line);
    }
    if (!reply) continue;
    reply->push_back('\n');
    if (std::fwrite(reply->data(), 1, reply->size(), out) != reply->size() || std::fflush(out) != 0) {
      LOG_ERROR("mcp: stdout closed; stopping");
      return 1;
    }
  }
  return 0;
}

}  // namespace recur::mcp
