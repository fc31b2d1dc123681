// Fields of OpenAI's chat and completions APIs (and common vLLM extensions) that recur does not
// implement. A request that sets one to anything but its no-op value (tools: absent or empty,
// response_format: text, n: 1, penalties: 0, ...) gets a 400 naming the field (param) with code
// "unsupported", rather than an answer that silently ignored it. Fields outside this list are
// ignored, as OpenAI's server does for forward compatibility.
#pragma once

#include <nlohmann/json.hpp>

#include "core/expected.h"
#include "serve/api_error.h"
#include "serve/request.h"

namespace recur::serve {

expected<void, ApiError> refuse_unsupported_fields(const nlohmann::json& doc, CompletionRequest::Kind kind);

}  // namespace recur::serve
