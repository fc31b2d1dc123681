#include "engine/tokenizer.h"

#include "engine/tokenizer_bpe.h"
#include "engine/tokenizer_spm.h"

namespace recur {
namespace {

Result<const gguf::Value*> array_key(const gguf::File& f, const char* key, gguf::ValueType item, bool required) {
  const gguf::Value* v = f.find(key);
  if (v == nullptr) {
    if (required) return not_found("{}: tokenizer key '{}' is missing", f.source(), key);
    return static_cast<const gguf::Value*>(nullptr);
  }
  if (v->type != gguf::ValueType::kArray || v->item_type != item)
    return parse_error("{}: tokenizer key '{}' must be an array of {}", f.source(), key, gguf::value_type_name(item));
  return v;
}

}  // namespace

Result<Vocabulary> Vocabulary::from_gguf(const gguf::File& f) {
  Vocabulary v;
  RECUR_ASSIGN_OR_RETURN(v.model, f.get_string("tokenizer.ggml.model"));
  if (v.model != "llama" && v.model != "gpt2")
    return unsupported("{}: tokenizer model '{}' (recur reads 'llama' SPM and 'gpt2' BPE)", f.source(), v.model);
  RECUR_ASSIGN_OR_RETURN(const gguf::Value* tokens, array_key(f, "tokenizer.ggml.tokens", gguf::ValueType::kString, true));
  for (const auto& t : tokens->items) v.tokens.push_back(t.str);
  RECUR_ASSIGN_OR_RETURN(const gguf::Value* scores, array_key(f, "tokenizer.ggml.scores", gguf::ValueType::kFloat32, false));
  if (scores) {
    if (scores->items.size() != v.tokens.size())
      return parse_error("{}: {} tokenizer scores for {} tokens", f.source(), scores->items.size(), v.tokens.size());
    for (const auto& s : scores->items) v.scores.push_back(float(s.f64));
  }
  RECUR_ASSIGN_OR_RETURN(const gguf::Value* kinds, array_key(f, "tokenizer.ggml.token_type", gguf::ValueType::kInt32, false));
  if (kinds) {
    if (kinds->items.size() != v.tokens.size())
      return parse_error("{}: {} token types for {} tokens", f.source(), kinds->items.size(), v.tokens.size());
    for (const auto& k : kinds->items) v.kinds.push_back(TokenKind(k.i64));
  } else {
    v.kinds.assign(v.tokens.size(), TokenKind::kNormal);
  }
  RECUR_ASSIGN_OR_RETURN(const gguf::Value* merges, array_key(f, "tokenizer.ggml.merges", gguf::ValueType::kString, false));
  if (merges)
    for (const auto& m : merges->items) v.merges.push_back(m.str);
  if (f.find("tokenizer.ggml.pre")) {
    RECUR_ASSIGN_OR_RETURN(v.pre, f.get_string("tokenizer.ggml.pre"));
  }
  auto id = [&](const char* key, TokenId& out) -> Status {
    if (!f.find(key)) return ok_status();
    RECUR_ASSIGN_OR_RETURN(int64_t x, f.get_int(key));
    if (x < 0 || x >= int64_t(v.tokens.size()))
      return parse_error("{}: {} = {} is outside the vocabulary of {}", f.source(), key, x, v.tokens.size());
    out = TokenId(x);
    return ok_status();
  };
  RECUR_RETURN_IF_ERROR(id("tokenizer.ggml.bos_token_id", v.bos));
  RECUR_RETURN_IF_ERROR(id("tokenizer.ggml.eos_token_id", v.eos));
  RECUR_RETURN_IF_ERROR(id("tokenizer.ggml.unknown_token_id", v.unknown));
  if (f.find("tokenizer.ggml.add_bos_token")) {
    RECUR_ASSIGN_OR_RETURN(int64_t b, f.get_int("tokenizer.ggml.add_bos_token"));
    v.add_bos = b != 0;
  }
  if (f.find("tokenizer.ggml.add_space_prefix")) {
    RECUR_ASSIGN_OR_RETURN(int64_t b, f.get_int("tokenizer.ggml.add_space_prefix"));
    v.add_space_prefix = b != 0;
  } else if (v.model == "gpt2") {
    v.add_space_prefix = false;
  }
  return v;
}

void Vocabulary::to_gguf(gguf::Writer& w) const {
  using gguf::Value;
  w.set("tokenizer.ggml.model", Value::of_string(model));
  w.set("tokenizer.ggml.tokens", Value::of_strings(tokens));
  if (!scores.empty()) w.set("tokenizer.ggml.scores", Value::of_f32s(scores));
  std::vector<int32_t> k;
  for (TokenKind x : kinds) k.push_back(int32_t(x));
  w.set("tokenizer.ggml.token_type", Value::of_i32s(k));
  if (!merges.empty()) w.set("tokenizer.ggml.merges", Value::of_strings(merges));
  if (!pre.empty()) w.set("tokenizer.ggml.pre", Value::of_string(pre));
  if (bos >= 0) w.set("tokenizer.ggml.bos_token_id", Value::of_u32(uint32_t(bos)));
  if (eos >= 0) w.set("tokenizer.ggml.eos_token_id", Value::of_u32(uint32_t(eos)));
  if (unknown >= 0) w.set("tokenizer.ggml.unknown_token_id", Value::of_u32(uint32_t(unknown)));
  w.set("tokenizer.ggml.add_bos_token", Value::of_bool(add_bos));
  w.set("tokenizer.ggml.add_space_prefix", Value::of_bool(add_space_prefix));
}

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
  id_of_.reserve(vocab_.tokens.size());
  for (size_t i = 0; i < vocab_.tokens.size(); ++i) id_of_.emplace(vocab_.tokens[i], TokenId(i));
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool strip_space_prefix) const {
  std::string out;
  for (TokenId id : ids) out += piece(id);
  if (strip_space_prefix && vocab_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(Vocabulary vocab) {
  if (vocab.tokens.empty()) return invalid_argument("tokenizer vocabulary is empty");
  if (vocab.kinds.size() != vocab.tokens.size()) vocab.kinds.assign(vocab.tokens.size(), TokenKind::kNormal);
  if (vocab.model == "llama") return make_spm_tokenizer(std::move(vocab));
  if (vocab.model == "gpt2") return make_bpe_tokenizer(std::move(vocab));
  return unsupported("tokenizer model '{}' (recur reads 'llama' SPM and 'gpt2' BPE)", vocab.model);
}

}  // namespace recur
