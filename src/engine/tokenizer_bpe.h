// Byte-level BPE tokenizer (GGUF "gpt2"): GPT-2 pre-tokenization, bytes mapped to printable
// code points, merges applied by rank.
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
