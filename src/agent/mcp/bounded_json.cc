#include "mcp/bounded_json.h"

namespace recur::mcp {

int json_nesting_depth(std::string_view text, int stop_above) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > stop_above) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Result<nlohmann::json> parse_bounded(std::string_view line, const Limits& limits) {
  if (line.size() > limits.max_line_bytes)
    return invalid_argument("request: {} bytes is over the limit of {} bytes per message", line.size(),
                            limits.max_line_bytes);
  if (int d = json_nesting_depth(line, limits.max_depth); d > limits.max_depth)
    return invalid_argument("request: JSON nested deeper than {} levels", limits.max_depth);
  // Exceptions stay inside this function: the parser's message names the byte position.
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 7: syntax error ..." -> the reason.
    std::string_view what = e.what();
    if (auto col = what.find("column "); col != std::string_view::npos)
      if (auto colon = what.find(": ", col); colon != std::string_view::npos) what.remove_prefix(colon + 2);
    return parse_error("request: byte {}: {}", e.byte, what);
  } catch (const nlohmann::json::exception& e) {
    // A number too large for a double (out_of_range 406) is not a parse_error.
    return parse_error("request: {}", e.what());
  }
}

}  // namespace recur::mcp
