#include "serve/unsupported_fields.h"

#include <string_view>

namespace recur::serve {
namespace {

using nlohmann::json;

bool is_null_or_empty(const json& v) { return v.is_null() || (v.is_structured() && v.empty()); }
bool is_false(const json& v) { return v.is_null() || v == false; }
bool is_zero(const json& v) { return v.is_null() || (v.is_number() && v.get<double>() == 0.0); }
bool is_one(const json& v) { return v.is_null() || (v.is_number_integer() && v.get<int64_t>() == 1); }
bool is_none(const json& v) { return v.is_null() || v == "none"; }
bool is_text_format(const json& v) { return v.is_null() || (v.is_object() && v.value("type", json()) == "text"); }
bool is_text_modality(const json& v) { return v.is_null() || v == json::array({"text"}); }
bool is_empty_string(const json& v) { return v.is_null() || v == ""; }
bool is_null(const json& v) { return v.is_null(); }

enum class Applies { kBoth, kChat, kCompletion };

struct UnsupportedField {
  const char* name;
  Applies applies;
  bool (*is_noop)(const json&);
  const char* what;  // what the request asked for, in the error
};

constexpr UnsupportedField kUnsupported[] = {
    {"n", Applies::kBoth, is_one, "several choices (only n = 1 is supported)"},
    {"best_of", Applies::kCompletion, is_one, "best-of sampling (only best_of = 1 is supported)"},
    {"tools", Applies::kChat, is_null_or_empty, "tool calling"},
    {"tool_choice", Applies::kChat, is_none, "tool calling"},
    {"parallel_tool_calls", Applies::kChat, is_false, "tool calling"},
    {"functions", Applies::kChat, is_null_or_empty, "function calling"},
    {"function_call", Applies::kChat, is_none, "function calling"},
    {"response_format", Applies::kBoth, is_text_format, "structured output (only {\"type\": \"text\"} is supported)"},
    {"logit_bias", Applies::kBoth, is_null_or_empty, "logit biases"},
    {"presence_penalty", Applies::kBoth, is_zero, "a presence penalty (only 0 is supported)"},
    {"frequency_penalty", Applies::kBoth, is_zero, "a frequency penalty (only 0 is supported)"},
    {"suffix", Applies::kCompletion, is_empty_string, "a suffix (insertion)"},
    {"audio", Applies::kChat, is_null_or_empty, "audio output"},
    {"modalities", Applies::kChat, is_text_modality, "output modalities other than [\"text\"]"},
    {"prediction", Applies::kChat, is_null_or_empty, "predicted outputs"},
    {"web_search_options", Applies::kChat, is_null, "web search"},
    {"reasoning_effort", Applies::kChat, is_null, "a reasoning effort (recur serves no reasoning model)"},
    {"store", Applies::kChat, is_false, "storing the completion"},
    // vLLM's sampling extensions: a client that sets them expects them applied.
    {"top_k", Applies::kBoth, [](const json& v) { return v.is_null() || v == -1 || v == 0; }, "top-k sampling"},
    {"min_p", Applies::kBoth, is_zero, "min-p sampling"},
    {"repetition_penalty", Applies::kBoth, is_one, "a repetition penalty (only 1 is supported)"},
    {"use_beam_search", Applies::kBoth, is_false, "beam search"},
    {"guided_json", Applies::kBoth, is_null, "guided decoding"},
    {"guided_regex", Applies::kBoth, is_null, "guided decoding"},
    {"guided_choice", Applies::kBoth, is_null, "guided decoding"},
    {"guided_grammar", Applies::kBoth, is_null, "guided decoding"},
};

bool applies_to(Applies a, CompletionRequest::Kind kind) {
  return a == Applies::kBoth || (a == Applies::kChat) == (kind == CompletionRequest::Kind::kChat);
}

}  // namespace

expected<void, ApiError> refuse_unsupported_fields(const json& doc, CompletionRequest::Kind kind) {
  for (const UnsupportedField& f : kUnsupported) {
    auto it = doc.find(f.name);
    if (it == doc.end() || !applies_to(f.applies, kind) || f.is_noop(*it)) continue;
    return unexpected(bad_request(f.name, "unsupported", "'{}' is not supported: recur does not implement {}; leave "
                                  "'{}' out", f.name, f.what, f.name));
  }
  return {};
}

}  // namespace recur::serve
