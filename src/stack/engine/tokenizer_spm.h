// SentencePiece-style tokenizer (GGUF "llama"): score-ordered bigram merges over UTF-8
// characters, spaces as U+2581, byte fallback through <0xXX> tokens.
#pragma once

#include <memory>

#include "engine/tokenizer.h"

namespace recur {
Result<std::unique_ptr<Tokenizer>> make_spm_tokenizer(Vocabulary vocab);
}  // namespace recur
