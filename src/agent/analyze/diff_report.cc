// Text, Feedback and JSON forms of a DiffResult.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "analyze/diff.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {
namespace {

using nlohmann::json;

std::string relative(int64_t delta, int64_t base) {
  if (base == 0) return "n/a";
  return fmt::format("{:+.1f}%", 100.0 * double(delta) / double(base));
}

std::string threads_text(const DiffThreads& t) {
  std::string s = fmt::format("threads: {} named + {} unnamed -> {} named + {} unnamed", t.base_named, t.base_unnamed,
                              t.cand_named, t.cand_unnamed);
  if (!t.added.empty()) s += fmt::format("; added: {}", fmt::join(t.added, ", "));
  if (!t.removed.empty()) s += fmt::format("; removed: {}", fmt::join(t.removed, ", "));
  return s;
}

std::string row_evidence(const DiffRow& row) {
  std::string s = fmt::format("self {} in {} -> {} in {} ({})", format_ns(row.base_self_ns), row.base_count,
                              format_ns(row.cand_self_ns), row.cand_count, format_delta_ns(row.delta_ns()));
  if (row.base_count == 0) s += ", only in CAND";
  if (row.cand_count == 0) s += ", only in BASE";
  if (row.has_worst && row.base_count + row.cand_count > 2)
    s += fmt::format(", occurrence #{} {}", row.worst_k, format_delta_ns(row.worst_delta_ns));
  return s;
}

}  // namespace

std::string render_diff(const DiffOptions& options, const DiffResult& r) {
  std::string out = fmt::format("diff of {}: BASE {} -> CAND {} ({}, {})\n", r.measure, format_ns(r.base_ns),
                                format_ns(r.cand_ns), format_delta_ns(r.delta_ns()), relative(r.delta_ns(), r.base_ns));
  if (options.root) out += fmt::format("  root zones: {} -> {}\n", r.base_roots, r.cand_roots);
  out += "  " + threads_text(r.threads) + "\n";
  TextTable table({"path (self time)", ">BASE n", ">BASE", ">CAND n", ">CAND", ">change", ">share", ">worst #k"});
  for (size_t k = 0; k < r.rows.size() && k < options.top; ++k) {
    const DiffRow& row = r.rows[k];
    if (row.delta_ns() == 0 && k > 0) break;
    std::string share = row.share > 0 ? percent(row.share) : row.delta_ns() != 0 ? "offset" : "-";
    std::string worst = row.has_worst ? fmt::format("#{} {}", row.worst_k, format_delta_ns(row.worst_delta_ns)) : "-";
    table.add_row({row.path, std::to_string(row.base_count), format_ns(row.base_self_ns), std::to_string(row.cand_count),
                   format_ns(row.cand_self_ns), format_delta_ns(row.delta_ns()), share, worst});
  }
  table.add_row({std::string(kUnattributed), "", "", "", "", format_delta_ns(r.unattributed_ns),
                 r.unattributed_share > 0 ? percent(r.unattributed_share) : r.unattributed_ns != 0 ? "offset" : "-", ""});
  out += table.render();
  out += fmt::format("  gross change {} {}, offsets {}: net {}\n", r.delta_ns() >= 0 ? "up" : "down",
                     format_ns(r.gross_ns), format_ns(r.offsets_ns), format_delta_ns(r.delta_ns()));
  return out;
}

Feedback diff_feedback(const DiffOptions& options, const DiffResult& r, std::string_view base_name,
                       std::string_view cand_name) {
  Feedback f = analysis_feedback("diff", fmt::format("{} of {} (BASE) vs {} (CAND)", r.measure, base_name, cand_name));
  f.add_metric("base_us", ns_to_us(r.base_ns), "us");
  f.add_metric("cand_us", ns_to_us(r.cand_ns), "us");
  f.add_metric("change_us", ns_to_us(r.delta_ns()), "us");
  if (r.base_ns != 0) f.add_metric("change_frac", double(r.delta_ns()) / double(r.base_ns));
  f.add_metric("unattributed_us", ns_to_us(r.unattributed_ns), "us");
  f.add_metric("offsets_us", ns_to_us(r.offsets_ns), "us");
  std::vector<Attribution> parts;
  for (const DiffRow& row : r.rows)
    if (row.share > 0) parts.push_back({row.path, row.share, row_evidence(row)});
  std::stable_sort(parts.begin(), parts.end(), [](const Attribution& a, const Attribution& b) { return a.share > b.share; });
  set_decomposition(f, parts, options.top, "paths", r.unattributed_share,
                    fmt::format("{} of the end-to-end change is not in any path's self time (parallel threads, time "
                                "outside zones)",
                                format_delta_ns(r.unattributed_ns)));
  f.notes.push_back(threads_text(r.threads));
  if (r.offsets_ns > 0) {
    std::vector<std::string> offsets;
    for (const DiffRow& row : r.rows) {
      if (row.share == 0 && row.delta_ns() != 0 && offsets.size() < kNamedOffsets)
        offsets.push_back(fmt::format("{} {}", row.path, format_delta_ns(row.delta_ns())));
    }
    f.notes.push_back(fmt::format("offsets (moved against the change) {}: {}; shares are of the gross change {}",
                                  format_ns(r.offsets_ns), fmt::join(offsets, ", "), format_ns(r.gross_ns)));
  }
  if (r.paths_unnamed > 0)
    f.notes.push_back(fmt::format("{} rows past the top {} have no path in details: their texts total more than {} MiB "
                                  "(nesting this deep)",
                                  r.paths_unnamed, options.top, kPathTextBudget >> 20));
  if (!r.rows.empty() && r.rows.front().share > 0)
    f.next.push_back(fmt::format("recur analyze breakdown CAND --by path --select 'path={}'", r.rows.front().path));
  return f;
}

json diff_details(const DiffOptions& options, const DiffResult& r) {
  json rows = json::array();
  for (const DiffRow& row : r.rows) {
    json j = {{"path", row.path.empty() && r.paths_unnamed > 0 ? json(nullptr) : json(row.path)},
              {"base_count", row.base_count},
              {"cand_count", row.cand_count},
              {"base_self_us", ns_to_us(row.base_self_ns)},
              {"cand_self_us", ns_to_us(row.cand_self_ns)},
              {"change_us", ns_to_us(row.delta_ns())},
              {"share", row.share},
              {"offset", row.share == 0 && row.delta_ns() != 0}};
    if (row.has_worst) j["worst"] = {{"k", row.worst_k}, {"change_us", ns_to_us(row.worst_delta_ns)}};
    rows.push_back(std::move(j));
  }
  return {{"measure", r.measure},
          {"root", options.root ? json(options.root->text()) : json(nullptr)},
          {"base_us", ns_to_us(r.base_ns)},
          {"cand_us", ns_to_us(r.cand_ns)},
          {"change_us", ns_to_us(r.delta_ns())},
          {"base_roots", r.base_roots},
          {"cand_roots", r.cand_roots},
          {"components_us", ns_to_us(r.components_ns)},
          {"unattributed_us", ns_to_us(r.unattributed_ns)},
          {"unattributed_share", r.unattributed_share},
          {"gross_us", ns_to_us(r.gross_ns)},
          {"offsets_us", ns_to_us(r.offsets_ns)},
          {"threads",
           {{"added", r.threads.added},
            {"removed", r.threads.removed},
            {"base_named", r.threads.base_named},
            {"cand_named", r.threads.cand_named},
            {"base_unnamed", r.threads.base_unnamed},
            {"cand_unnamed", r.threads.cand_unnamed}}},
          {"rows", std::move(rows)}};
}

}  // namespace recur::analyze
