// Helpers the analyses' reports share: zones as one line of text or a JSON object, times
// relative to the trace's first zone, and the Feedback skeleton of an `analyze.<verb>` record.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/zone_tree.h"
#include "core/feedback.h"

namespace recur::analyze {

inline double ns_to_us(int64_t ns) { return double(ns) / 1e3; }

// "attention at +1.234 ms for 56.000 us on prefill (7/12)"; "-" for kNoZone.
std::string zone_text(const ZoneTree& tree, uint32_t zone);
// {"name", "path", "thread", "ts_us" (as in the file), "offset_us" (from the first zone),
// "dur_us"}; null for kNoZone. A path longer than kZonePathBytes is cut to ".../" and its
// last whole segments (ZoneTree::path_tail): details list thousands of zones.
inline constexpr size_t kZonePathBytes = 4096;
nlohmann::json zone_json(const ZoneTree& tree, uint32_t zone);
// Percent with one decimal: "61.3%".
std::string percent(double share);

// Sets f's attribution to a decomposition: `parts` (largest first) up to `top`, the rest summed
// into one "(N more <what>)" component, then `unattributed` with its share and evidence.
void set_decomposition(Feedback& f, const std::vector<Attribution>& parts, size_t top, std::string_view what,
                       double unattributed_share, std::string unattributed_evidence);

// probe "analyze.<verb>", tier 0 (deterministic), verdict inconclusive: the analyses measure
// and test no hypothesis.
Feedback analysis_feedback(std::string_view verb, std::string subject);

}  // namespace recur::analyze
