// libFuzzer target: the JSON files of a Hugging Face model directory (hf_checkpoint.h) parse or
// fail cleanly. The first byte picks the reader: config.json (hf_config.h), the shard index
// model.safetensors.index.json, or tokenizer.json (hf_tokenizer.h); the rest is the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engine/hf_checkpoint.h"
#include "engine/hf_config.h"
#include "engine/hf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto c = recur::read_hf_config(text, "config.json");
      // A config that parses is one the loaders accept: validate() already ran.
      if (c && (c->row == nullptr || !c->config.validate())) std::abort();
      break;
    }
    case 1: {
      auto index = recur::parse_hf_shard_index(text, "model.safetensors.index.json");
      if (index)
        for (const auto& f : index->files)
          if (f.find('/') != std::string::npos || !f.ends_with(".safetensors")) std::abort();
      break;
    }
    default: {
      auto v = recur::vocabulary_from_hf_tokenizer({.tokenizer_json = text, .source = "tokenizer.json", .vocab_size = 512});
      if (v && v->tokens.size() != 512) std::abort();
      break;
    }
  }
  return 0;
}
