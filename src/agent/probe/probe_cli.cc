#include "probe/probe_cli.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace recur::probe {

Result<KernelTarget> resolve_kernel_target(const kernels::KernelRegistry& registry, std::string_view kernel,
                                           std::string_view variant, std::string_view vs, std::string_view shape,
                                           std::string_view knob_value) {
  KernelTarget t;
  RECUR_ASSIGN_OR_RETURN(t.spec, registry.lookup(kernel));
  std::string_view want = variant.empty() ? knob_value : variant;
  if (want.empty() || want == "auto") {
    t.variant = t.spec->best_variant();
    if (t.variant == nullptr) return unsupported("kernel {}: no variant runs at isa {}", kernel, isa_name(active_isa()));
  } else {
    RECUR_ASSIGN_OR_RETURN(t.variant, t.spec->lookup_variant(want));
  }
  if (!vs.empty()) {
    RECUR_ASSIGN_OR_RETURN(t.vs, t.spec->lookup_variant(vs));
  }
  RECUR_ASSIGN_OR_RETURN(t.shape, t.spec->parse_shape(shape));
  return t;
}

Result<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view what) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string item(text.substr(pos, end - pos));
    if (item.empty() || item.size() > 18 || !std::all_of(item.begin(), item.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      return invalid_argument("{} '{}': item '{}' is not a non-negative integer", what, text, item);
    out.push_back(std::stoll(item));
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(std::move(cur)), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

void print_feedback(const Feedback& f, bool json) {
  if (json) std::puts(feedback_to_json(f).dump(2).c_str());
  else std::fputs(render_feedback(f).c_str(), stdout);
}

}  // namespace recur::probe
