#include "loop/openai_proposer.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "loop/proposer_protocol.h"

namespace recur::agent {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kAnswerTokens = 256;     // max_tokens of one answer: an action is one short object
constexpr double kRequestTimeoutS = 120;  // per request, when --proposer-max-s leaves more

std::string api_key_from_environment() {
  for (const char* name : {"RECUR_PROPOSER_API_KEY", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  return "";
}

// Tokens of text when the endpoint reports no usage: about four characters each.
int64_t estimated_tokens(size_t chars) { return int64_t(chars + 3) / 4; }

}  // namespace

const std::string_view kOpenAIProposerSystemPrompt = R"(You are the proposer of recur's infra agent, which tunes an LLM inference stack through registered knobs. An acceptance gate failed; attribution probes measured which components explain the gap. You choose the next single knob change to test. The agent validates it with the cheapest probe that can refute it (kernel check, microbenchmark, then the gate) and keeps it only if the gate gets closer to passing.

The user message is the state as JSON:
- episode: the situation; config: the candidate's knobs now
- gate: its outcome and conditions; evidence: components with their share of the gap, and findings
- next: open changes suggested by the built-in search, most promising first
- last_feedback: the latest experiment's record; tried: changes already tried from this configuration
- rejected: why your earlier answers were refused (do not repeat them)
- fixed: knobs you must not change; knobs: the relevant knobs with type, choices, current value and components
- knobless: measured components no knob acts on; patch_request (when present): the largest component is one of them, so a code change is what is needed
- lookahead (when present): config includes a change the gate reverted alone although it improved its own component (licensed_by); you name its partner, and the pair is kept only when the gate gets strictly closer than must_beat

Answer with exactly one JSON object and nothing else:
{"action": "set", "knobs": {"KNOB": "VALUE"}, "hypothesis": "why this change should close the gap"}
one knob per answer; the value is a string and one of the knob's choices (or in its range); it must differ from the current value and not be in tried or fixed.
To ask a question first (its record comes back as last_feedback; the configuration does not change):
{"action": "probe", "probe": "check" or "bench", "args": {"kernel": "K", "variant": "V", "vs": "W", "shape": "M64,N4096"}, "hypothesis": "..."}
When the state's actions include "patch", a code change that adds a kernel variant (built and judged in a worktree of its own, its record in last_feedback):
{"action": "patch", "patch": "<unified diff>", "hypothesis": "...", "kernel": "K"}
Or, when no change is worth trying:
{"action": "stop", "why": "..."})";

OpenAIProposer::OpenAIProposer(std::string url, std::unique_ptr<ChatClient> client, ProposerOptions options)
    : url_(std::move(url)), client_(std::move(client)), options_(std::move(options)), model_(options_.model) {}

Result<std::unique_ptr<OpenAIProposer>> OpenAIProposer::create(std::string_view url, const ProposerOptions& options) {
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<ChatClient> client, ChatClient::connect(url, api_key_from_environment()));
  return std::unique_ptr<OpenAIProposer>(new OpenAIProposer(std::string(url), std::move(client), options));
}

std::string OpenAIProposer::limit_reached() const {
  const ProposerLimits& l = options_.limits;
  if (l.max_calls > 0 && calls_ >= l.max_calls)
    return fmt::format("proposer limit: {} calls (--proposer-max-calls)", calls_);
  if (l.max_tokens > 0 && tokens_ >= l.max_tokens)
    return fmt::format("proposer limit: {} tokens of {} (--proposer-max-tokens)", tokens_, l.max_tokens);
  if (l.max_s > 0 && waited_s_ >= l.max_s)
    return fmt::format("proposer limit: {:.1f} s of {:g} s waiting for answers (--proposer-max-s)", waited_s_, l.max_s);
  return "";
}

double OpenAIProposer::seconds_left() const {
  return options_.limits.max_s > 0 ? std::min(kRequestTimeoutS, options_.limits.max_s - waited_s_) : kRequestTimeoutS;
}

void OpenAIProposer::log_exchange(const json& request, const Result<ChatAnswer>& answer, double seconds) const {
  if (options_.log_path.empty()) return;
  json line = {{"call", calls_}, {"seconds", seconds}, {"request", request}};
  if (answer) line["response"] = json::parse(answer->body, nullptr, false);
  else line["error"] = answer.error().message();
  std::ofstream(options_.log_path, std::ios::app) << line.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

Result<std::optional<Proposal>> OpenAIProposer::propose(const AgentState& state) {
  stop_reason_ = limit_reached();
  if (!stop_reason_.empty()) return std::optional<Proposal>();
  if (model_.empty()) {
    const Clock::time_point t0 = Clock::now();
    Result<std::string> m = client_->first_model(seconds_left());
    waited_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
    if (!m) return unexpected(m.error());
    model_ = *m;
  }
  const json request = {{"model", model_},
                        {"messages", json::array({{{"role", "system"}, {"content", kOpenAIProposerSystemPrompt}},
                                                  {{"role", "user"}, {"content", compact_state_json(state).dump()}}})},
                        {"temperature", 0},
                        {"max_tokens", kAnswerTokens}};
  ++calls_;
  const Clock::time_point t0 = Clock::now();
  Result<ChatAnswer> answer = client_->complete(request, seconds_left());
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  waited_s_ += seconds;
  log_exchange(request, answer, seconds);
  if (!answer) return unexpected(answer.error());
  tokens_ += answer->has_usage ? answer->prompt_tokens + answer->completion_tokens
                               : estimated_tokens(request.dump().size() + answer->content.size());
  Result<json> action = first_json_object(answer->content);
  if (!action) return invalid_argument("proposer '{}': {}", name(), action.error().message());
  return parse_action(*action, state, name());
}

}  // namespace recur::agent
