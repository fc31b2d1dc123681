#include "analyze/report_util.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/text_table.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {

std::string zone_text(const ZoneTree& tree, uint32_t zone) {
  if (zone == kNoZone) return "-";
  const Zone& z = tree.zone(zone);
  return fmt::format("{} at +{} for {} on {}", fit(tree.table().name(z.event), 80), format_ns(z.begin - tree.first_begin()),
                     format_ns(z.dur()), thread_label(tree.table(), z.track));
}

nlohmann::json zone_json(const ZoneTree& tree, uint32_t zone) {
  if (zone == kNoZone) return nullptr;
  const Zone& z = tree.zone(zone);
  return {{"name", tree.table().name(z.event)},
          {"path", tree.path_tail(z.path, kZonePathBytes)},
          {"thread", thread_label(tree.table(), z.track)},
          {"ts_us", ns_to_us(z.begin)},
          {"offset_us", ns_to_us(z.begin - tree.first_begin())},
          {"dur_us", ns_to_us(z.dur())}};
}

std::string percent(double share) { return fmt::format("{:.1f}%", 100 * share); }

void set_decomposition(Feedback& f, const std::vector<Attribution>& parts, size_t top, std::string_view what,
                       double unattributed_share, std::string unattributed_evidence) {
  f.attribution_is_decomposition = true;
  f.attribution.clear();
  double rest = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k < top) {
      f.attribution.push_back(parts[k]);
    } else {
      rest += parts[k].share;
    }
  }
  if (parts.size() > top) {
    f.attribution.push_back({fmt::format("({} more {})", parts.size() - top, what), rest, "past --top"});
  }
  f.attribution.push_back({std::string(kUnattributed), unattributed_share, std::move(unattributed_evidence)});
}

Feedback analysis_feedback(std::string_view verb, std::string subject) {
  Feedback f;
  f.probe = fmt::format("analyze.{}", verb);
  f.tier = 0;
  f.subject = std::move(subject);
  f.verdict = Verdict::kInconclusive;
  return f;
}

}  // namespace recur::analyze
