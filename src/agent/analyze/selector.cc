#include "analyze/selector.h"

#include <charconv>

#include <fmt/format.h>
#include <re2/re2.h>

#include "analyze/trace_labels.h"

namespace recur::analyze {
namespace {

struct KeyName {
  std::string_view name;
  SelectorKey key;
};
constexpr KeyName kKeys[] = {
    {"name", SelectorKey::kName},       {"cat", SelectorKey::kCat},   {"thread", SelectorKey::kThread},
    {"tid", SelectorKey::kTid},         {"pid", SelectorKey::kPid},   {"process", SelectorKey::kProcess},
    {"stream", SelectorKey::kStream},   {"path", SelectorKey::kPath},
};
constexpr std::string_view kExpectedKeys = "name, cat, thread, tid, pid, process, stream, arg:KEY or path";

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Splits at top-level commas: not inside (), [] or {} of a regex, not escaped ("\," -> ",").
// Each piece keeps the column it starts at.
struct Piece {
  std::string text;
  size_t column;
};
std::vector<Piece> split_terms(std::string_view text) {
  std::vector<Piece> out(1, Piece{"", 1});
  int depth = 0;
  bool in_regex = false;  // past a '~' in this term: brackets count
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == ',') {
        out.back().text += ',';
      } else {
        out.back().text += c;
        out.back().text += text[i + 1];
      }
      ++i;
      continue;
    }
    if (c == ',' && depth <= 0) {
      out.push_back(Piece{"", i + 2});
      depth = 0;
      in_regex = false;
      continue;
    }
    if (c == '~') in_regex = true;
    if (in_regex && (c == '(' || c == '[' || c == '{')) ++depth;
    if (in_regex && (c == ')' || c == ']' || c == '}')) --depth;
    out.back().text += c;
  }
  return out;
}

unexpected<Error> term_error(std::string_view selector, size_t column, std::string_view what) {
  return invalid_argument("selector '{}': column {}: {}", selector, column, what);
}

Result<SelectorTerm> parse_term(std::string_view selector, const Piece& piece) {
  std::string_view s = piece.text;
  SelectorTerm term;
  term.column = piece.column;
  if (s.empty()) return term_error(selector, piece.column, "empty term (expected KEY=VALUE, KEY~REGEX, ...)");
  size_t op_at = s.find_first_of("=~!");
  std::string_view key = s.substr(0, op_at);
  if (key.starts_with("arg:")) {
    term.key = SelectorKey::kArg;
    term.arg_key = std::string(key.substr(4));
    if (term.arg_key.empty()) return term_error(selector, piece.column + 4, "expected an arg key after 'arg:'");
  } else {
    bool known = false;
    for (const KeyName& k : kKeys) {
      if (k.name == key) {
        term.key = k.key;
        known = true;
      }
    }
    if (!known) {
      return term_error(selector, piece.column,
                        fmt::format("unknown key '{}' (expected {})", key, kExpectedKeys));
    }
  }
  if (op_at == std::string_view::npos) {
    if (term.key != SelectorKey::kArg) {
      return term_error(selector, piece.column + s.size(),
                        fmt::format("expected an operator (=, !=, ~ or !~) after '{}'", key));
    }
    term.op = SelectorOp::kHas;
    return term;
  }
  std::string_view rest = s.substr(op_at);
  size_t op_len = 1;
  if (rest.starts_with("!=")) {
    term.op = SelectorOp::kNotEqual, op_len = 2;
  } else if (rest.starts_with("!~")) {
    term.op = SelectorOp::kNoMatch, op_len = 2;
  } else if (rest.starts_with("=")) {
    term.op = SelectorOp::kEqual;
  } else if (rest.starts_with("~")) {
    term.op = SelectorOp::kMatch;
  } else {
    return term_error(selector, piece.column + op_at,
                      fmt::format("expected an operator (=, !=, ~ or !~), got '{}'", rest.substr(0, 2)));
  }
  size_t value_column = piece.column + op_at + op_len;
  term.value = std::string(rest.substr(op_len));
  term.number = parse_int(term.value);
  bool regex_op = term.op == SelectorOp::kMatch || term.op == SelectorOp::kNoMatch;
  if (regex_op) {
    RE2::Options options;
    options.set_log_errors(false);  // the error is returned, not printed
    auto re = std::make_shared<const RE2>(term.value, options);
    if (!re->ok()) {
      return term_error(selector, value_column, fmt::format("bad regex '{}': {}", term.value, re->error()));
    }
    term.regex = std::move(re);
  } else if (term.key == SelectorKey::kStream && !term.number) {
    return term_error(selector, value_column, fmt::format("expected an integer stream id, got '{}'", term.value));
  }
  return term;
}

// The text an arg is compared against.
std::string arg_text(const trace::EventTable& t, const trace::Arg& a) {
  switch (a.type) {
    case trace::ArgType::kNull: return "null";
    case trace::ArgType::kBool: return a.b ? "true" : "false";
    case trace::ArgType::kInt: return std::to_string(a.i);
    case trace::ArgType::kUint: return std::to_string(a.u);
    case trace::ArgType::kDouble: return fmt::format("{}", a.d);
    case trace::ArgType::kString:
    case trace::ArgType::kJson: return std::string(t.str(a.s));
  }
  return "";
}

bool text_matches(const SelectorTerm& term, std::string_view text) {
  switch (term.op) {
    case SelectorOp::kEqual: return text == term.value;
    case SelectorOp::kNotEqual: return text != term.value;
    case SelectorOp::kMatch: return RE2::PartialMatch(text, *term.regex);
    case SelectorOp::kNoMatch: return !RE2::PartialMatch(text, *term.regex);
    case SelectorOp::kHas: return true;
  }
  return false;
}

bool arg_matches(const SelectorTerm& term, const trace::EventTable& t, size_t event) {
  const trace::Arg* a = t.find_arg(event, term.arg_key);
  if (term.op == SelectorOp::kHas) return a != nullptr;
  if (a == nullptr) return term.op == SelectorOp::kNotEqual || term.op == SelectorOp::kNoMatch;
  bool numeric = a->type == trace::ArgType::kInt || a->type == trace::ArgType::kUint ||
                 a->type == trace::ArgType::kDouble;
  if (numeric && (term.op == SelectorOp::kEqual || term.op == SelectorOp::kNotEqual)) {
    if (auto want = parse_double(term.value)) {
      double have = a->type == trace::ArgType::kInt ? double(a->i)
                    : a->type == trace::ArgType::kUint ? double(a->u) : a->d;
      return (have == *want) == (term.op == SelectorOp::kEqual);
    }
  }
  return text_matches(term, arg_text(t, *a));
}

}  // namespace

Result<Selector> Selector::parse(std::string_view text) {
  Selector s;
  s.text_ = std::string(text);
  if (text == "*") return s;
  if (text.empty()) return invalid_argument("selector '': empty (expected KEY=VALUE terms joined by commas, or *)");
  for (const Piece& piece : split_terms(text)) {
    RECUR_ASSIGN_OR_RETURN(SelectorTerm term, parse_term(text, piece));
    s.terms_.push_back(std::move(term));
  }
  return s;
}

Selector Selector::all() {
  Selector s;
  s.text_.assign(1, '*');  // not = "*": g++ 12 warns falsely (-Wrestrict) at -O3
  return s;
}

ZoneMatcher::ZoneMatcher(const Selector& selector, const ZoneTree& tree)
    : selector_(&selector), tree_(&tree), memo_(selector.terms().size()) {}

bool ZoneMatcher::matches(uint32_t zone) const {
  for (size_t k = 0; k < selector_->terms().size(); ++k)
    if (!term_matches(k, zone)) return false;
  return true;
}

std::vector<uint32_t> ZoneMatcher::select() const {
  std::vector<uint32_t> out;
  for (uint32_t z = 0; z < tree_->size(); ++z)
    if (matches(z)) out.push_back(z);
  return out;
}

bool ZoneMatcher::term_matches(size_t k, uint32_t zone) const {
  const SelectorTerm& term = selector_->terms()[k];
  const trace::EventTable& t = tree_->table();
  const Zone& z = tree_->zone(zone);
  // Terms over per-event values are evaluated directly.
  if (term.key == SelectorKey::kArg) return arg_matches(term, t, z.event);
  if (term.key == SelectorKey::kStream) {
    auto stream = t.int_arg(z.event, "stream");
    if (term.op == SelectorOp::kEqual) return stream && stream == term.number;
    if (term.op == SelectorOp::kNotEqual) return !stream || stream != term.number;
    return text_matches(term, stream ? std::to_string(*stream) : std::string());
  }
  // The rest are functions of a string id, a track, a pid or a path: cached.
  size_t index = 0, domain = 0;
  switch (term.key) {
    case SelectorKey::kName: index = t.name_id(z.event), domain = t.strings().size(); break;
    case SelectorKey::kCat: index = t.cat_id(z.event), domain = t.strings().size(); break;
    case SelectorKey::kThread:
    case SelectorKey::kTid:
    case SelectorKey::kPid:
    case SelectorKey::kProcess: index = z.track, domain = t.tracks().size(); break;
    case SelectorKey::kPath: index = z.path, domain = tree_->path_count(); break;
    default: break;
  }
  std::vector<int8_t>& memo = memo_[k];
  if (memo.size() < domain) memo.resize(domain, -1);
  if (memo[index] >= 0) return memo[index] != 0;
  bool yes = false;
  const trace::Track& track = t.tracks()[z.track];
  switch (term.key) {
    case SelectorKey::kName: yes = text_matches(term, t.name(z.event)); break;
    case SelectorKey::kCat: yes = text_matches(term, t.cat(z.event)); break;
    case SelectorKey::kThread: yes = text_matches(term, thread_text(t, z.track)); break;
    case SelectorKey::kTid:
      if (term.number && track.tid_label == 0 && (term.op == SelectorOp::kEqual || term.op == SelectorOp::kNotEqual)) {
        yes = (track.tid == *term.number) == (term.op == SelectorOp::kEqual);
      } else {
        yes = text_matches(term, tid_text(t, z.track));
      }
      break;
    case SelectorKey::kPid: yes = text_matches(term, pid_text(t, track.pid)); break;
    case SelectorKey::kProcess: yes = text_matches(term, process_text(t, track.pid)); break;
    case SelectorKey::kPath:
      if (term.op == SelectorOp::kEqual || term.op == SelectorOp::kNotEqual) {
        // `path=a/b`: the path is a/b or ends in "/a/b" (from the segments: no text built).
        yes = tree_->path_ends_with(z.path, term.value) == (term.op == SelectorOp::kEqual);
      } else {
        yes = text_matches(term, tree_->path(z.path));
      }
      break;
    default: break;
  }
  memo[index] = yes ? 1 : 0;
  return yes;
}

}  // namespace recur::analyze
