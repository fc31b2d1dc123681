// The chat template: how a list of messages becomes one prompt. recur's synthetic models have no
// template of their own, so the server uses one simple, documented form (docs/serve.md):
//
//   <|system|>\n{content}\n<|user|>\n{content}\n<|assistant|>\n{content}\n ... <|assistant|>\n
//
// one header line per message, then the header the model continues from.
#pragma once

#include <span>
#include <string>

#include "serve/request.h"

namespace recur::serve {

std::string render_chat_prompt(std::span<const ChatMessage> messages);

}  // namespace recur::serve
