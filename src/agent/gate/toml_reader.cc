#include "gate/toml_reader.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace recur::gate {

Result<toml::table> parse_toml(std::string_view text, const std::string& file) {
  try {
    return toml::parse(text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    const auto& p = e.source().begin;
    return parse_error("{}:{}:{}: {}", file, p.line, p.column, e.description());
  }
}

Result<std::string> read_text_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("{}: cannot open {}", path, what);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error("{}: cannot read {}", path, what);
  return text.str();
}

Result<DocumentTitle> read_title(TomlTable& top, const std::string& file) {
  DocumentTitle t;
  RECUR_ASSIGN_OR_RETURN(auto name, top.string("name"));
  t.name = name ? *name : std::filesystem::path(file).stem().string();
  RECUR_ASSIGN_OR_RETURN(auto description, top.string("description"));
  if (description) t.description = *description;
  return t;
}

std::string node_position(std::string_view file, const toml::node& node) {
  const toml::source_position& p = node.source().begin;
  if (!p) return std::string(file);
  return fmt::format("{}:{}:{}", file, p.line, p.column);
}

namespace {

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    default: return "a date/time";
  }
}

}  // namespace

TomlTable::TomlTable(const toml::table& table, std::string file, std::string name)
    : table_(table), file_(std::move(file)), name_(std::move(name)) {}

Error TomlTable::error_at(const toml::node& node, std::string_view key, std::string_view message) const {
  return Error(ErrorCode::kParse, fmt::format("{}: {} {}: {}", node_position(file_, node), name_, key, message));
}

const toml::node* TomlTable::find(std::string_view key) {
  asked_.insert(std::string(key));
  return table_.get(key);
}

Result<std::optional<std::string>> TomlTable::string(std::string_view key) {
  const toml::node* n = find(key);
  if (n == nullptr) return std::optional<std::string>();
  if (!n->is_string()) return unexpected(error_at(*n, key, fmt::format("expected a string, got {}", type_name(*n))));
  return std::optional<std::string>(n->as_string()->get());
}

Result<std::optional<int64_t>> TomlTable::integer(std::string_view key, int64_t min, int64_t max) {
  const toml::node* n = find(key);
  if (n == nullptr) return std::optional<int64_t>();
  if (!n->is_integer() || n->as_integer()->get() < min || n->as_integer()->get() > max) {
    std::string got = n->is_integer() ? fmt::format("{}", n->as_integer()->get()) : std::string(type_name(*n));
    return unexpected(error_at(*n, key, fmt::format("expected an integer in [{}, {}], got {}", min, max, got)));
  }
  return std::optional<int64_t>(n->as_integer()->get());
}

Result<std::optional<double>> TomlTable::number(std::string_view key, double min, double max) {
  const toml::node* n = find(key);
  if (n == nullptr) return std::optional<double>();
  std::optional<double> v;
  if (n->is_integer()) v = double(n->as_integer()->get());
  if (n->is_floating_point()) v = n->as_floating_point()->get();
  if (!v || *v < min || *v > max) {
    std::string got = v ? fmt::format("{}", *v) : std::string(type_name(*n));
    return unexpected(error_at(*n, key, fmt::format("expected a number in [{}, {}], got {}", min, max, got)));
  }
  return v;
}

Result<std::optional<std::vector<std::string>>> TomlTable::strings(std::string_view key) {
  const toml::node* n = find(key);
  if (n == nullptr) return std::optional<std::vector<std::string>>();
  if (!n->is_array())
    return unexpected(error_at(*n, key, fmt::format("expected an array of strings, got {}", type_name(*n))));
  std::vector<std::string> out;
  for (const toml::node& item : *n->as_array()) {
    if (!item.is_string())
      return unexpected(error_at(item, fmt::format("{}[{}]", key, out.size()),
                                 fmt::format("expected a string, got {}", type_name(item))));
    out.push_back(item.as_string()->get());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::optional<std::vector<int64_t>>> TomlTable::integers(std::string_view key, int64_t min, int64_t max) {
  const toml::node* n = find(key);
  if (n == nullptr) return std::optional<std::vector<int64_t>>();
  if (!n->is_array())
    return unexpected(error_at(*n, key, fmt::format("expected an array of integers, got {}", type_name(*n))));
  std::vector<int64_t> out;
  for (const toml::node& item : *n->as_array()) {
    if (!item.is_integer() || item.as_integer()->get() < min || item.as_integer()->get() > max)
      return unexpected(error_at(item, fmt::format("{}[{}]", key, out.size()),
                                 fmt::format("expected an integer in [{}, {}]", min, max)));
    out.push_back(item.as_integer()->get());
  }
  return std::optional<std::vector<int64_t>>(std::move(out));
}

Result<std::optional<TomlTable>> TomlTable::subtable(std::string_view key) {
  const toml::node* n = find(key);
  if (n == nullptr) return std::optional<TomlTable>();
  if (!n->is_table()) return unexpected(error_at(*n, key, fmt::format("expected a table, got {}", type_name(*n))));
  std::string inner = name_.size() > 2 && name_.front() == '[' ? fmt::format("[{}.{}]", name_.substr(1, name_.size() - 2), key)
                                                                 : fmt::format("[{}]", key);
  return std::optional<TomlTable>(TomlTable(*n->as_table(), file_, std::move(inner)));
}

Status TomlTable::finish() const {
  for (auto&& [k, v] : table_) {
    if (asked_.count(k.str())) continue;
    return unexpected(Error(ErrorCode::kParse,
                            fmt::format("{}: {}: unknown key '{}'; expected one of: {}", node_position(file_, v), name_,
                                        k.str(), fmt::join(asked_, ", "))));
  }
  return ok_status();
}

}  // namespace recur::gate
