// A plain-text table for the analyses' human output: columns padded to their widest cell,
// left-aligned text and right-aligned numbers (chosen per column), two spaces apart. Cells
// longer than kMaxCell (C++ kernel names in Kineto traces run to 500 characters) keep their
// head and tail around "...".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace recur::analyze {

// s, or its head and tail around "..." when longer than max.
std::string fit(std::string_view s, size_t max);

class TextTable {
 public:
  static constexpr size_t kMaxCell = 100;
  // One header per column; a header starting with '>' right-aligns its column (the '>' is
  // not printed).
  explicit TextTable(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  // Every line indented by `indent` spaces, each ending in '\n'.
  std::string render(size_t indent = 2) const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace recur::analyze
