#include "serve/chat_template.h"

namespace recur::serve {

std::string render_chat_prompt(std::span<const ChatMessage> messages) {
  std::string out;
  for (const ChatMessage& m : messages) {
    out += "<|" + m.role + "|>\n";
    out += m.content;
    out += '\n';
  }
  out += "<|assistant|>\n";
  return out;
}

}  // namespace recur::serve
