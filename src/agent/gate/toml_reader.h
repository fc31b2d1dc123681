// Strict reading of one TOML table: typed getters with ranges, positions in every message
// ("gate.toml:7:18: [workload.engine] runs: expected an integer in [1, 1000], got 0") and an
// error for keys nobody asked for (typos). Used by the gate spec reader; not thread-safe (one
// reader per table).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "core/status.h"

namespace recur::gate {

// Parses a TOML document; a syntax error reads "file:line:col: what toml++ says".
Result<toml::table> parse_toml(std::string_view text, const std::string& file);
// The whole text of a file; `what` names it in errors ("the gate spec", "the episode").
Result<std::string> read_text_file(const std::string& path, std::string_view what);

class TomlTable;
// The top-level `name` (default: the file's stem) and `description` (default: "") of a document.
struct DocumentTitle {
  std::string name, description;
};
Result<DocumentTitle> read_title(TomlTable& top, const std::string& file);

// "file:line:col" of a node (just "file" when the node has no source position).
std::string node_position(std::string_view file, const toml::node& node);

class TomlTable {
 public:
  // `name` is how messages call the table: "[workload.engine]", "the top level".
  TomlTable(const toml::table& table, std::string file, std::string name);

  const toml::table& table() const { return table_; }
  const std::string& file() const { return file_; }
  const std::string& name() const { return name_; }
  const toml::node* find(std::string_view key);  // marks the key as known
  Result<std::optional<std::string>> string(std::string_view key);
  Result<std::optional<int64_t>> integer(std::string_view key, int64_t min, int64_t max);
  Result<std::optional<double>> number(std::string_view key, double min, double max);  // int or float
  Result<std::optional<std::vector<std::string>>> strings(std::string_view key);
  Result<std::optional<std::vector<int64_t>>> integers(std::string_view key, int64_t min, int64_t max);
  // A sub-table; errors when the key holds something else.
  Result<std::optional<TomlTable>> subtable(std::string_view key);
  // Fails naming the first key that no getter asked for, listing the keys asked for (call it
  // after reading every key the table may hold).
  Status finish() const;

  // An error at `node`: "file:line:col: <name> <key>: <message>".
  Error error_at(const toml::node& node, std::string_view key, std::string_view message) const;

 private:
  const toml::table& table_;
  std::string file_, name_;
  std::set<std::string, std::less<>> asked_;
};

}  // namespace recur::gate
