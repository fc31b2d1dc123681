#include "engine/hf_tokenizer.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/utf8.h"

namespace recur {

namespace {

using nlohmann::json;

constexpr std::string_view kHfSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

// The byte-level BPE split regexes recur implements (tokenizer_pre.h), by GGUF pre name.
struct HfKnownRegex {
  std::string_view pre, regex;
};
constexpr std::string_view kHfGpt2Regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr HfKnownRegex kHfRegexes[] = {
    {"gpt-2", kHfGpt2Regex},
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

// The pre-tokenizer steps of tokenizer.json, flattened: each Split's regex, and ByteLevel's own
// gpt-2 regex when it has use_regex (true unless set false).
Status hf_collect_splits(const json& p, std::string_view source, std::vector<std::string>& regexes, bool& byte_level) {
  if (p.is_null()) return ok_status();
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    for (const json& s : p.value("pretokenizers", json::array()))
      RECUR_RETURN_IF_ERROR(hf_collect_splits(s, source, regexes, byte_level));
    return ok_status();
  }
  if (type == "ByteLevel") {
    byte_level = true;
    if (p.value("use_regex", true)) regexes.emplace_back(kHfGpt2Regex);
    return ok_status();
  }
  if (type == "Split") {
    const json* pattern = p.contains("pattern") ? &p["pattern"] : nullptr;
    if (pattern != nullptr && pattern->is_object() && (*pattern).contains("Regex") && (*pattern)["Regex"].is_string()) {
      regexes.push_back((*pattern)["Regex"].get<std::string>());
      return ok_status();
    }
    return unsupported("{}: pre_tokenizer Split on {} (recur reads Split on a Regex)", source, pattern ? pattern->dump() : "null");
  }
  if (type == "Digits" || type == "Punctuation")
    return unsupported("{}: pre_tokenizer step '{}' (recur's byte-level BPE pre-tokenizers: gpt-2, llama3, qwen2)", source, type);
  return unsupported("{}: pre_tokenizer '{}' (recur's byte-level BPE pre-tokenizers: gpt-2, llama3, qwen2)", source, type);
}

Result<std::string> hf_bpe_pre_name(const json& tok, std::string_view source) {
  std::vector<std::string> regexes;
  bool byte_level = false;
  RECUR_RETURN_IF_ERROR(hf_collect_splits(tok.contains("pre_tokenizer") ? tok["pre_tokenizer"] : json(), source, regexes, byte_level));
  if (!byte_level) return unsupported("{}: a BPE tokenizer without byte_fallback needs a ByteLevel pre_tokenizer", source);
  if (regexes.size() == 1)
    for (const HfKnownRegex& k : kHfRegexes)
      if (k.regex == regexes[0]) return std::string(k.pre);
  std::string quoted;
  for (const std::string& r : regexes) quoted += (quoted.empty() ? "" : ", then ") + fmt::format("'{}'", r);
  return unsupported("{}: pre-tokenizer split {} is not one recur implements (gpt-2's, Llama 3's or Qwen2's regex alone)",
                     source, quoted.empty() ? "(none)" : quoted);
}

// A merge as "left right" (older files) or ["left", "right"] (newer ones).
Result<std::string> hf_merge_text(const json& m, std::string_view source, size_t i) {
  if (m.is_string()) return m.get<std::string>();
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return m[0].get<std::string>() + " " + m[1].get<std::string>();
  return parse_error("{}: model.merges[{}] must be \"left right\" or [\"left\", \"right\"]", source, i);
}

bool hf_is_byte_token(std::string_view t) {
  return t.size() == 6 && t.starts_with("<0x") && t.ends_with(">") && std::isxdigit(uint8_t(t[3])) &&
         std::isxdigit(uint8_t(t[4]));
}

bool hf_prepends_space(const json& tok) {
  auto has = [](const json& node, auto&& self) -> bool {
    if (node.is_object()) {
      const std::string type = node.value("type", "");
      if (type == "Prepend" && node.value("prepend", "") == kHfSpmSpace) return true;
      if (type == "Metaspace") return node.value("prepend_scheme", node.value("add_prefix_space", true) ? "always" : "never") != "never";
      for (const auto& [k, v] : node.items())
        if (self(v, self)) return true;
    } else if (node.is_array()) {
      for (const json& v : node)
        if (self(v, self)) return true;
    }
    return false;
  };
  return (tok.contains("normalizer") && has(tok["normalizer"], has)) ||
         (tok.contains("pre_tokenizer") && has(tok["pre_tokenizer"], has));
}

bool hf_template_adds_bos(const json& tok) {
  if (!tok.contains("post_processor") || !tok["post_processor"].is_object()) return false;
  const json& p = tok["post_processor"];
  auto first_special = [](const json& t) {
    return t.value("type", "") == "TemplateProcessing" && t.contains("single") && t["single"].is_array() &&
           !t["single"].empty() && t["single"][0].contains("SpecialToken");
  };
  if (first_special(p)) return true;
  for (const json& s : p.value("processors", json::array()))
    if (first_special(s)) return true;
  return false;
}

}  // namespace

Result<Vocabulary> vocabulary_from_hf_tokenizer(const HfTokenizerInputs& in) {
  const std::string_view source = in.source;
  json tok = json::parse(in.tokenizer_json, nullptr, /*allow_exceptions=*/false);
  if (tok.is_discarded() || !tok.is_object()) return parse_error("{}: not a JSON object", source);
  if (!tok.contains("model") || !tok["model"].is_object()) return parse_error("{}: missing object 'model'", source);
  const json& model = tok["model"];
  const std::string type = model.value("type", "");
  if (type != "BPE")
    return unsupported("{}: tokenizer model '{}' (recur reads BPE tokenizers: byte-level, or with byte_fallback)", source,
                       type.empty() ? "(none)" : type);
  if (!model.contains("vocab") || !model["vocab"].is_object()) return parse_error("{}: missing object 'model.vocab'", source);
  const bool spm = model.value("byte_fallback", false);

  // id -> (token, special, added)
  std::map<int64_t, std::pair<std::string, int>> by_id;  // int: 0 normal, 1 added, 2 added special
  auto put = [&](int64_t id, const std::string& text, int kind) -> Status {
    if (id < 0 || id >= in.vocab_size)
      return parse_error("{}: token '{}' has id {}, outside the model's vocab_size {}", source, text, id, in.vocab_size);
    auto [it, fresh] = by_id.emplace(id, std::make_pair(text, kind));
    if (!fresh) {
      if (it->second.first != text)
        return parse_error("{}: id {} is both '{}' and '{}'", source, id, it->second.first, text);
      it->second.second = std::max(it->second.second, kind);
    }
    return ok_status();
  };
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) return parse_error("{}: model.vocab['{}'] must be an integer id", source, text);
    RECUR_RETURN_IF_ERROR(put(id.get<int64_t>(), text, 0));
  }
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const json& a : tok["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        return parse_error("{}: added_tokens entries need an integer 'id' and a string 'content'", source);
      RECUR_RETURN_IF_ERROR(put(a["id"].get<int64_t>(), a["content"].get<std::string>(), a.value("special", false) ? 2 : 1));
    }
  }

  std::vector<std::string> merges;
  if (model.contains("merges")) {
    if (!model["merges"].is_array()) return parse_error("{}: 'model.merges' must be an array", source);
    for (size_t i = 0; i < model["merges"].size(); ++i) {
      RECUR_ASSIGN_OR_RETURN(std::string m, hf_merge_text(model["merges"][i], source, i));
      merges.push_back(std::move(m));
    }
  }

  Vocabulary v;
  v.model = spm ? "llama" : "gpt2";
  const std::string unk = model.contains("unk_token") && model["unk_token"].is_string() ? model["unk_token"].get<std::string>() : "";
  v.tokens.resize(size_t(in.vocab_size));
  v.kinds.assign(size_t(in.vocab_size), TokenKind::kUnused);
  for (int i = 0; i < in.vocab_size; ++i) v.tokens[size_t(i)] = fmt::format("[PAD{}]", i);
  std::map<std::string, int, std::less<>> id_of;
  for (const auto& [id, entry] : by_id) {
    const auto& [text, kind] = entry;
    v.tokens[size_t(id)] = text;
    id_of.emplace(text, int(id));
    TokenKind k = kind == 2 ? TokenKind::kControl : kind == 1 ? TokenKind::kUserDefined : TokenKind::kNormal;
    if (!unk.empty() && text == unk) k = TokenKind::kUnknown;
    else if (spm && hf_is_byte_token(text)) k = TokenKind::kByte;
    v.kinds[size_t(id)] = k;
    if (!unk.empty() && text == unk) v.unknown = int(id);
  }
  if (spm) {
    // SentencePiece merges the best-scoring pair: a merged token scores -(its merge's rank), so
    // earlier merges win as in BPE; tokens no merge makes score below every merge.
    v.scores.assign(size_t(in.vocab_size), -float(merges.size() + 1));
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const std::string& m = merges[rank];
      const size_t space = m.find(' ');
      if (space == std::string::npos) return parse_error("{}: model.merges[{}] '{}' has no space", source, rank, m);
      auto it = id_of.find(m.substr(0, space) + m.substr(space + 1));
      if (it != id_of.end() && v.scores[size_t(it->second)] < -float(rank)) v.scores[size_t(it->second)] = -float(rank);
    }
    v.add_space_prefix = hf_prepends_space(tok);
    v.add_bos = true;
  } else {
    RECUR_ASSIGN_OR_RETURN(v.pre, hf_bpe_pre_name(tok, source));
    v.merges = std::move(merges);
    v.add_space_prefix = false;
    v.add_bos = hf_template_adds_bos(tok);
  }
  if (in.bos >= in.vocab_size || in.eos >= in.vocab_size)
    return parse_error("{}: bos_token_id {} / eos_token_id {} lie outside vocab_size {}", source, in.bos, in.eos, in.vocab_size);
  v.bos = in.bos;
  v.eos = in.eos;
  if (!in.tokenizer_config_json.empty()) {
    json cfg = json::parse(in.tokenizer_config_json, nullptr, /*allow_exceptions=*/false);
    if (cfg.is_discarded() || !cfg.is_object()) return parse_error("{}: tokenizer_config.json is not a JSON object", source);
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) v.add_bos = cfg["add_bos_token"].get<bool>();
  }
  return v;
}

Result<std::string> hf_tokenizer_json(const Vocabulary& v) {
  json vocab = json::object(), added = json::array(), merges = json::array();
  const bool spm = v.model == "llama";
  if (!spm && v.model != "gpt2") return invalid_argument("tokenizer model '{}' has no tokenizer.json form here", v.model);
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const TokenKind k = id < v.kinds.size() ? v.kinds[id] : TokenKind::kNormal;
    if (k == TokenKind::kUnused) continue;
    vocab[v.tokens[id]] = id;
    if (k == TokenKind::kControl || k == TokenKind::kUnknown || k == TokenKind::kUserDefined)
      added.push_back({{"id", id}, {"content", v.tokens[id]}, {"special", k != TokenKind::kUserDefined}});
  }
  json tok = json::object();
  if (spm) {
    // Each multi-character normal token is made by one merge of two tokens; merges ordered by
    // score, best first, as SentencePiece ranks them.
    std::map<std::string, size_t> id_of;
    for (size_t i = 0; i < v.tokens.size(); ++i) id_of.emplace(v.tokens[i], i);
    std::vector<std::pair<float, std::string>> ranked;
    for (size_t id = 0; id < v.tokens.size(); ++id) {
      if (v.kinds[id] != TokenKind::kNormal) continue;
      const std::string& t = v.tokens[id];
      for (size_t cut = utf8::char_length(t, 0); cut < t.size(); cut += utf8::char_length(t, cut)) {
        if (id_of.count(t.substr(0, cut)) && id_of.count(t.substr(cut))) {
          ranked.emplace_back(v.scores.empty() ? 0.0f : v.scores[id], t.substr(0, cut) + " " + t.substr(cut));
          break;
        }
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (auto& [score, m] : ranked) merges.push_back(m);
    json normalizers = json::array();
    if (v.add_space_prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", std::string(kHfSpmSpace)}});
    normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", std::string(kHfSpmSpace)}});
    tok["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalizers}};
    tok["pre_tokenizer"] = nullptr;
  } else {
    for (const std::string& m : v.merges) merges.push_back(m);
    const std::string pre = v.pre.empty() ? "gpt-2" : v.pre;
    const HfKnownRegex* known = nullptr;
    for (const HfKnownRegex& k : kHfRegexes)
      if (k.pre == pre || (pre == "llama3" && k.pre == "llama-bpe")) known = &k;
    if (known == nullptr) return invalid_argument("BPE pre-tokenizer '{}' has no tokenizer.json form here", pre);
    tok["pre_tokenizer"] = {{"type", "Sequence"},
                            {"pretokenizers",
                             {{{"type", "Split"}, {"pattern", {{"Regex", std::string(known->regex)}}}, {"behavior", "Isolated"}},
                              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
    tok["normalizer"] = nullptr;
  }
  json model = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"byte_fallback", spm}};
  if (v.unknown >= 0) model["unk_token"] = v.tokens[size_t(v.unknown)];
  tok["version"] = "1.0";
  tok["added_tokens"] = added;
  tok["model"] = model;
  return tok.dump();
}

}  // namespace recur
