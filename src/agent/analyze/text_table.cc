#include "analyze/text_table.h"

#include <algorithm>

namespace recur::analyze {

TextTable::TextTable(std::vector<std::string> headers) {
  for (std::string& h : headers) {
    bool right = !h.empty() && h[0] == '>';
    right_.push_back(right);
    headers_.push_back(right ? h.substr(1) : std::move(h));
  }
}

std::string fit(std::string_view s, size_t max) {
  if (s.size() <= max || max < 5) return std::string(s);
  size_t head = (max - 3) / 2, tail = max - 3 - head;
  return std::string(s.substr(0, head)) + "..." + std::string(s.substr(s.size() - tail));
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  for (std::string& c : cells) c = fit(c, kMaxCell);
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(size_t indent) const {
  std::vector<size_t> width(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    width[c] = headers_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s(indent, ' ');
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string pad(width[c] - cells[c].size(), ' ');
      bool last = c + 1 == cells.size();
      if (right_[c]) {
        s += pad + cells[c];
      } else {
        s += cells[c];
        if (!last) s += pad;
      }
      if (!last) s += "  ";
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out += s + "\n";
  };
  line(headers_);
  for (const auto& row : rows_) line(row);
  return out;
}

}  // namespace recur::analyze
