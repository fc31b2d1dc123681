// Byte-level BPE tokenizer (GGUF "gpt2"): the pre-tokenizer tokenizer.ggml.pre names
// (tokenizer_pre.h; gpt-2's when absent or unknown, with a warning for unknown names), bytes
// mapped to printable code points, merges applied by rank.
#pragma once

#include <memory>

#include "engine/tokenizer.h"

namespace recur {
Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(Vocabulary vocab);

// GPT-2's pre-tokenizer split (contractions, letters, digits, other, whitespace runs); exposed
// for tests.
std::vector<std::string_view> bpe_pre_tokenize(std::string_view text);

// GPT-2's byte -> code point table (printable bytes map to themselves), as UTF-8 strings.
const std::string& byte_to_unicode(uint8_t b);
}  // namespace recur
