// Hugging Face checkpoints, part 3: tokenizer.json (the `tokenizers` library's file) as the GGUF
// vocabulary llama.cpp's converter would write (tokenizer.h).
//
// Read: model.type "BPE" only (Unigram, WordPiece, WordLevel are refused by name).
//  - byte_fallback true (Llama 2, Mistral, Gemma): SentencePiece-style ("llama"): the merged tokens
//    score -rank of their merge, so the SPM tokenizer merges in the BPE order; <0xXX> tokens are
//    bytes; a Prepend "▁" normalizer or a Metaspace pre-tokenizer that prepends sets the space prefix.
//  - otherwise byte-level BPE ("gpt2"): vocab and merges as stored; the pre-tokenizer's split
//    regex must be one recur implements (gpt-2's, Llama 3's, Qwen2's: tokenizer_pre.h), else it is
//    refused quoting the regex.
// added_tokens become control tokens (special) or user-defined ones; ids missing below vocab_size
// are "[PAD<id>]" unused tokens, as the converter pads them.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/tokenizer.h"

namespace recur {

struct HfTokenizerInputs {
  std::string_view tokenizer_json;
  std::string_view source;        // for messages
  int vocab_size = 0;             // config.json vocab_size: the embedding's rows
  int bos = -1, eos = -1;         // config.json's ids (-1: none)
  std::string_view tokenizer_config_json;  // may be empty: add_bos_token when present
};

Result<Vocabulary> vocabulary_from_hf_tokenizer(const HfTokenizerInputs& in);

// The tokenizer.json of `v` (hf_export.h): the inverse of the above for recur's vocabularies.
Result<std::string> hf_tokenizer_json(const Vocabulary& v);

}  // namespace recur
