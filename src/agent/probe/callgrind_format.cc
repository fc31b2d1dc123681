#include "probe/callgrind_format.h"

#include <cctype>
#include <vector>

namespace recur::probe {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Reads an unsigned decimal (or 0x hex) number at s[pos]; advances pos.
bool read_uint(std::string_view s, size_t& pos, uint64_t& out) {
  size_t start = pos;
  out = 0;
  int base = 10;
  if (s.substr(pos, 2) == "0x") {
    base = 16;
    pos += 2;
    start = pos;
  }
  while (pos < s.size()) {
    char c = s[pos];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (base == 16 && std::isxdigit(static_cast<unsigned char>(c))) digit = std::tolower(c) - 'a' + 10;
    else break;
    if (out > (UINT64_MAX - uint64_t(digit)) / uint64_t(base)) return false;
    out = out * uint64_t(base) + uint64_t(digit);
    ++pos;
  }
  return pos > start;
}

void skip_spaces(std::string_view s, size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
}

}  // namespace

uint64_t CallgrindProfile::inclusive(const std::string& fn) const {
  uint64_t total_cost = 0;
  if (auto it = self.find(fn); it != self.end()) total_cost += it->second;
  if (auto it = calls.find(fn); it != calls.end())
    for (const auto& [callee, cost] : it->second) total_cost += cost;
  return total_cost;
}

Result<CallgrindProfile> parse_callgrind(std::string_view text) {
  CallgrindProfile p;
  std::map<uint64_t, std::string> fn_names;
  std::string fn = "???", cfn;
  size_t npositions = 1;
  bool pending_call = false, saw_events = false, have_total = false;
  uint64_t sum_self = 0;
  size_t line_no = 0, pos = 0;

  // "(id) name" or "(id)" or "name" -> name, registering compressed ids.
  auto resolve = [&](std::string_view v, std::map<uint64_t, std::string>& names) -> Result<std::string> {
    if (!v.empty() && v[0] == '(') {
      size_t i = 1;
      uint64_t id;
      if (!read_uint(v, i, id) || i >= v.size() || v[i] != ')')
        return parse_error("callgrind: line {}: bad compressed name '{}'", line_no, v);
      std::string_view rest = v.substr(i + 1);
      size_t j = 0;
      skip_spaces(rest, j);
      rest = rest.substr(j);
      if (rest.empty()) {
        auto it = names.find(id);
        if (it == names.end()) return parse_error("callgrind: line {}: name id ({}) used before it was defined", line_no, id);
        return it->second;
      }
      names[id] = std::string(rest);
      return std::string(rest);
    }
    return std::string(v);
  };
  std::map<uint64_t, std::string> file_names, obj_names;

  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') {
      if (end == text.size()) break;
      continue;
    }
    const char c0 = line[0];
    if (std::isdigit(static_cast<unsigned char>(c0)) || c0 == '+' || c0 == '-' || c0 == '*') {
      if (!saw_events) return parse_error("callgrind: line {}: cost line before the 'events:' header", line_no);
      size_t i = 0;
      for (size_t k = 0; k < npositions; ++k) {
        skip_spaces(line, i);
        if (i < line.size() && line[i] == '*') {
          ++i;
          continue;
        }
        if (i < line.size() && (line[i] == '+' || line[i] == '-')) ++i;
        uint64_t v;
        if (!read_uint(line, i, v)) return parse_error("callgrind: line {}: expected a position in '{}'", line_no, line);
      }
      skip_spaces(line, i);
      uint64_t cost = 0;
      if (i < line.size() && !read_uint(line, i, cost))
        return parse_error("callgrind: line {}: expected an event count in '{}'", line_no, line);
      while (i < line.size()) {  // further events: validated, not kept
        skip_spaces(line, i);
        if (i >= line.size()) break;
        uint64_t ignored;
        if (!read_uint(line, i, ignored)) return parse_error("callgrind: line {}: bad event count in '{}'", line_no, line);
      }
      if (pending_call) {
        p.calls[fn][cfn] += cost;
        pending_call = false;
      } else {
        p.self[fn] += cost;
        sum_self += cost;
      }
      continue;
    }
    size_t eq = line.find('=');
    size_t colon = line.find(':');
    if (eq != std::string_view::npos && (colon == std::string_view::npos || eq < colon)) {
      std::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
      if (key == "fn") {
        RECUR_ASSIGN_OR_RETURN(fn, resolve(value, fn_names));
      } else if (key == "cfn") {
        RECUR_ASSIGN_OR_RETURN(cfn, resolve(value, fn_names));
      } else if (key == "fl" || key == "fi" || key == "fe" || key == "cfl" || key == "cfi") {
        RECUR_RETURN_IF_ERROR(resolve(value, file_names));
      } else if (key == "ob" || key == "cob") {
        RECUR_RETURN_IF_ERROR(resolve(value, obj_names));
      } else if (key == "calls") {
        if (cfn.empty()) return parse_error("callgrind: line {}: calls= without a preceding cfn=", line_no);
        size_t i = 0;
        uint64_t count;
        if (!read_uint(value, i, count)) return parse_error("callgrind: line {}: calls= needs a count", line_no);
        pending_call = true;
      } else if (key == "jump" || key == "jcnd") {
        // Jump counts (--collect-jumps): not used.
      } else {
        return parse_error("callgrind: line {}: unknown specification '{}'", line_no, key);
      }
      continue;
    }
    if (colon == std::string_view::npos) return parse_error("callgrind: line {}: unrecognised line '{}'", line_no, line);
    std::string_view key = line.substr(0, colon), value = line.substr(colon + 1);
    size_t i = 0;
    skip_spaces(value, i);
    value = value.substr(i);
    if (key == "events") {
      saw_events = true;
      size_t sp = value.find(' ');
      p.events = std::string(value.substr(0, sp));
      if (p.events.empty()) return parse_error("callgrind: line {}: 'events:' names no event", line_no);
    } else if (key == "positions") {
      npositions = 0;
      size_t k = 0;
      while (k < value.size()) {
        skip_spaces(value, k);
        if (k >= value.size()) break;
        while (k < value.size() && value[k] != ' ') ++k;
        ++npositions;
      }
      if (npositions == 0) return parse_error("callgrind: line {}: 'positions:' is empty", line_no);
    } else if (key == "summary" || key == "totals") {
      size_t k = 0;
      uint64_t v;
      if (!read_uint(value, k, v)) return parse_error("callgrind: line {}: {} needs a number", line_no, key);
      if (!have_total || key == "totals") p.total = v;
      have_total = true;
    } else if (key == "desc") {
      if (starts_with(value, "Trigger:")) p.trigger = std::string(value.substr(8));
    }
    // version, creator, pid, cmd, part, thread and other headers carry nothing we need.
    if (end == text.size()) break;
  }
  if (!saw_events) return parse_error("callgrind: no 'events:' header: not a callgrind file");
  if (pending_call) return parse_error("callgrind: file ends after calls= without its cost line");
  if (!have_total) p.total = sum_self;
  return p;
}

}  // namespace recur::probe
