// The suite check (`recur agent eval --verify`, tests/episodes_expect_test.sh): for every
// episode with an [expect] table, the gate is run on the starting configuration and on the
// configuration [expect.verify] names, so a suite cannot rot: the start must fail (or pass,
// for an episode whose right answer is to change nothing) and the expected root cause must
// pass. An inconclusive gate is measured again, up to `tries` times; a decided verdict is final.
// Not thread-safe (gates time things).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "loop/episode.h"
#include "gate/interval.h"

namespace recur::agent {

struct GateCheck {
  std::string what;  // "start" or "verify"
  std::map<std::string, std::string> config;
  gate::Outcome wanted = gate::Outcome::kFail;
  gate::Outcome got = gate::Outcome::kInconclusive;
  std::string reason;  // the gate's deciding condition, or the error
  int tries = 0;
  double wall_s = 0;
  bool ok() const { return got == wanted; }
};

struct EpisodeCheck {
  std::string episode, path;
  std::vector<GateCheck> gates;
  // Why nothing ran: the expected root cause selects a kernel variant this CPU cannot run
  // (f32_tiled without AVX-512), so its pass cannot be checked here.
  std::string skipped;
  bool ok() const;
};

struct SuiteCheckOptions {
  int tries = 3;
  std::function<void(std::string_view)> progress;
};

// Episodes without [expect] are skipped (not in the result).
std::vector<EpisodeCheck> check_suite(const std::vector<Episode>& episodes, const SuiteCheckOptions& options);

std::string render_suite_check(const std::vector<EpisodeCheck>& checks);
nlohmann::json suite_check_json(const std::vector<EpisodeCheck>& checks);

}  // namespace recur::agent
