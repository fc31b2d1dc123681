#include "mcp/schema_check.h"

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace recur::mcp {

using nlohmann::json;

namespace {

bool has_type(const json& v, std::string_view type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return true;  // a type this checker does not know: do not reject
}

// A short rendering of a value for messages (never the whole of a large one).
std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

Status check_type(const json& v, const json& type, std::string_view path) {
  if (type.is_string()) {
    if (has_type(v, type.get<std::string>())) return ok_status();
    return invalid_argument("{}: expected {} {}, got {}", path, type.get<std::string>() == "integer" ? "an" : "a",
                            type.get<std::string>(), brief(v));
  }
  if (type.is_array()) {
    for (const json& t : type)
      if (t.is_string() && has_type(v, t.get<std::string>())) return ok_status();
    return invalid_argument("{}: expected one of the types {}, got {}", path, type.dump(), brief(v));
  }
  return ok_status();
}

Status check_object(const json& v, const json& schema, std::string_view path) {
  const json* props = schema.contains("properties") && schema["properties"].is_object() ? &schema["properties"] : nullptr;
  if (auto req = schema.find("required"); req != schema.end() && req->is_array())
    for (const json& name : *req)
      if (name.is_string() && !v.contains(name.get<std::string>()))
        return invalid_argument("{}: missing required property '{}'", path, name.get<std::string>());
  const bool closed = schema.value("additionalProperties", true) == false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    std::string child = fmt::format("{}.{}", path, it.key());
    if (props && props->contains(it.key())) {
      RECUR_RETURN_IF_ERROR(check_against_schema(it.value(), (*props)[it.key()], child));
    } else if (closed) {
      std::string known;
      if (props)
        for (auto p = props->begin(); p != props->end(); ++p) known += (known.empty() ? "" : ", ") + p.key();
      return invalid_argument("{}: unknown property; expected one of: {}", child, known.empty() ? "(none)" : known);
    }
  }
  return ok_status();
}

Status check_array(const json& v, const json& schema, std::string_view path) {
  if (auto n = schema.find("minItems"); n != schema.end() && n->is_number() && v.size() < n->get<double>())
    return invalid_argument("{}: expected at least {} items, got {}", path, n->dump(), v.size());
  if (auto n = schema.find("maxItems"); n != schema.end() && n->is_number() && v.size() > n->get<double>())
    return invalid_argument("{}: expected at most {} items, got {}", path, n->dump(), v.size());
  if (auto items = schema.find("items"); items != schema.end() && items->is_object())
    for (size_t i = 0; i < v.size(); ++i)
      RECUR_RETURN_IF_ERROR(check_against_schema(v[i], *items, fmt::format("{}[{}]", path, i)));
  return ok_status();
}

}  // namespace

Status check_against_schema(const json& v, const json& schema, std::string_view path) {
  if (!schema.is_object()) return ok_status();
  if (auto t = schema.find("type"); t != schema.end()) RECUR_RETURN_IF_ERROR(check_type(v, *t, path));
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    for (const json& x : *e) found = found || x == v;
    if (!found) return invalid_argument("{}: {} is not one of {}", path, brief(v), brief(*e));
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (auto m = schema.find("minimum"); m != schema.end() && m->is_number() && x < m->get<double>())
      return invalid_argument("{}: {} is below the minimum {}", path, brief(v), m->dump());
    if (auto m = schema.find("maximum"); m != schema.end() && m->is_number() && x > m->get<double>())
      return invalid_argument("{}: {} is above the maximum {}", path, brief(v), m->dump());
  }
  if (v.is_string())
    if (auto m = schema.find("maxLength"); m != schema.end() && m->is_number() && v.get_ref<const std::string&>().size() > m->get<double>())
      return invalid_argument("{}: longer than {} characters", path, m->dump());
  if (v.is_object()) return check_object(v, schema, path);
  if (v.is_array()) return check_array(v, schema, path);
  return ok_status();
}

}  // namespace recur::mcp
