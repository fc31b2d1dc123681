#include "loop/command_proposer.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loop/proposer_protocol.h"

namespace recur::agent {

namespace fs = std::filesystem;
using nlohmann::json;

Result<std::optional<Proposal>> CommandProposer::propose(const AgentState& state) {
  const fs::path dir = fs::temp_directory_path();
  const fs::path in = dir / fmt::format("recur-proposer-{}.in.json", ::getpid());
  const fs::path out = dir / fmt::format("recur-proposer-{}.out.json", ::getpid());
  {
    std::ofstream f(in);
    f << state_json(state).dump(2);
    if (!f) return io_error("proposer: cannot write {}", in.string());
  }
  const std::string line = fmt::format("{} < '{}' > '{}'", command_, in.string(), out.string());
  const int rc = std::system(line.c_str());
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  fs::remove(in);
  fs::remove(out);
  if (rc != 0) return internal_error("proposer '{}' exited with status {}", command_, rc);
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return invalid_argument("proposer '{}': stdout is not a JSON object: expected {{\"knob\", \"value\", \"hypothesis\"}} "
                       "or {{\"stop\": true}}, got '{}'",
                       command_, excerpt(text.str()));
  return parse_action(j, state, name());
}

}  // namespace recur::agent
