// What `recur agent run` prints: for people, the gate's verdict, every experiment as
// hypothesis -> probe -> result -> decision, the root cause (the kept changes and their
// evidence) and the final config diff; for machines, the same as JSON.
// Pure functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "loop/loop.h"

namespace recur::agent {

// One short line for an experiment's result: "refuted: ratio 0.91 [0.88, 0.95]".
std::string result_line(const Feedback& f);

std::string render_summary(const LoopResult& r, const std::string& report_path);
nlohmann::json summary_json(const LoopResult& r, const std::string& report_path);

}  // namespace recur::agent
