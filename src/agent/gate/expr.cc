#include "gate/expr.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace recur::gate {

Error ExprSource::error(std::string_view text, size_t offset, std::string_view message) const {
  std::string where = file.empty() ? std::string("<condition>") : file;
  if (line > 0 && column > 0) {
    where += fmt::format(":{}:{}", line, column + int(offset));
  } else if (line > 0) {
    where += fmt::format(":{}", line);
  }
  std::string head = label.empty() ? where : fmt::format("{}: {}", where, label);
  if (line == 0 || column == 0) head += fmt::format(" (column {} of the expression)", offset + 1);
  return Error(ErrorCode::kParse, fmt::format("{}: {}\n    {}\n    {}^", head, message, text, std::string(offset, ' ')));
}

std::string_view expr_op_symbol(ExprOp op) {
  switch (op) {
    case ExprOp::kNumber: return "number";
    case ExprOp::kCall: return "call";
    case ExprOp::kNeg: return "-";
    case ExprOp::kNot: return "not";
    case ExprOp::kAdd: return "+";
    case ExprOp::kSub: return "-";
    case ExprOp::kMul: return "*";
    case ExprOp::kDiv: return "/";
    case ExprOp::kLt: return "<";
    case ExprOp::kLe: return "<=";
    case ExprOp::kGt: return ">";
    case ExprOp::kGe: return ">=";
    case ExprOp::kEq: return "==";
    case ExprOp::kNe: return "!=";
    case ExprOp::kAnd: return "and";
    case ExprOp::kOr: return "or";
  }
  return "?";
}

bool is_comparison(ExprOp op) { return op >= ExprOp::kLt && op <= ExprOp::kNe; }

namespace {

enum class Tok { kEnd, kNumber, kIdent, kString, kPunct };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // punctuation, identifier, string contents
  double number = 0;
  size_t offset = 0;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd: return "the end of the condition";
    case Tok::kNumber: return fmt::format("number '{}'", t.text);
    case Tok::kIdent: return fmt::format("'{}'", t.text);
    case Tok::kString: return fmt::format("string \"{}\"", t.text);
    case Tok::kPunct: return fmt::format("'{}'", t.text);
  }
  return "?";
}

class Parser {
 public:
  Parser(std::string_view text, const ExprSource& source) : text_(text), source_(source) {}

  Result<Expr> parse() {
    RECUR_RETURN_IF_ERROR(advance());
    if (cur_.kind == Tok::kEnd) return fail(cur_.offset, "expected a condition, got an empty string");
    RECUR_ASSIGN_OR_RETURN(Expr e, parse_or());
    if (cur_.kind != Tok::kEnd) {
      if (cur_.kind == Tok::kPunct && (cur_.text == ">=" || cur_.text == "<=" || cur_.text == ">" || cur_.text == "<" ||
                                        cur_.text == "==" || cur_.text == "!="))
        return fail(cur_.offset, fmt::format("comparisons do not chain: expected 'and', 'or' or the end, got {}",
                                             describe(cur_)));
      return fail(cur_.offset, fmt::format("expected an operator, 'and', 'or' or the end, got {}", describe(cur_)));
    }
    return e;
  }

 private:
  unexpected<Error> fail(size_t offset, std::string_view message) const {
    return unexpected<Error>(source_.error(text_, offset, message));
  }

  // Reads the next token into cur_.
  Status advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    cur_ = Token{};
    cur_.offset = pos_;
    if (pos_ >= text_.size()) return ok_status();
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && pos_ + 1 < text_.size() &&
                                                        std::isdigit(static_cast<unsigned char>(text_[pos_ + 1])))) {
      size_t end = pos_;
      while (end < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[end])) || text_[end] == '.')) ++end;
      if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
        size_t e = end + 1;
        if (e < text_.size() && (text_[e] == '+' || text_[e] == '-')) ++e;
        if (e >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[e])))
          return fail(e, "expected the digits of an exponent");
        while (e < text_.size() && std::isdigit(static_cast<unsigned char>(text_[e]))) ++e;
        end = e;
      }
      if (end < text_.size() && ident_char(text_[end]))
        return fail(end, fmt::format("expected an operator after the number, got '{}'", text_[end]));
      cur_.kind = Tok::kNumber;
      cur_.text = std::string(text_.substr(pos_, end - pos_));
      auto [ptr, ec] = std::from_chars(cur_.text.data(), cur_.text.data() + cur_.text.size(), cur_.number);
      if (ec != std::errc() || ptr != cur_.text.data() + cur_.text.size())
        return fail(pos_, fmt::format("'{}' is not a number", cur_.text));
      pos_ = end;
      return ok_status();
    }
    if (ident_start(c)) {
      size_t end = pos_;
      while (end < text_.size() && ident_char(text_[end])) ++end;
      cur_.kind = Tok::kIdent;
      cur_.text = std::string(text_.substr(pos_, end - pos_));
      pos_ = end;
      return ok_status();
    }
    if (c == '"' || c == '\'') {
      size_t end = text_.find(c, pos_ + 1);
      if (end == std::string_view::npos) return fail(pos_, fmt::format("expected a closing {} for this string", c));
      cur_.kind = Tok::kString;
      cur_.text = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return ok_status();
    }
    static constexpr std::string_view kTwo[] = {">=", "<=", "==", "!=", "&&", "||"};
    for (std::string_view two : kTwo) {
      if (text_.substr(pos_, 2) == two) {
        cur_.kind = Tok::kPunct;
        cur_.text = std::string(two);
        pos_ += 2;
        return ok_status();
      }
    }
    if (std::string_view("()*/+-<>!,").find(c) != std::string_view::npos) {
      cur_.kind = Tok::kPunct;
      cur_.text = std::string(1, c);
      ++pos_;
      return ok_status();
    }
    if (c == '=') return fail(pos_, "expected '==' (or '>=', '<='), got a single '='");
    return fail(pos_, fmt::format("unexpected character '{}'", c));
  }

  bool is_punct(std::string_view p) const { return cur_.kind == Tok::kPunct && cur_.text == p; }
  bool is_word(std::string_view w) const { return cur_.kind == Tok::kIdent && cur_.text == w; }

  static Expr binary(ExprOp op, size_t offset, Expr lhs, Expr rhs) {
    Expr e;
    e.op = op;
    e.offset = offset;
    e.lhs = std::make_shared<const Expr>(std::move(lhs));
    e.rhs = std::make_shared<const Expr>(std::move(rhs));
    return e;
  }

  Result<Expr> parse_or() {
    RECUR_ASSIGN_OR_RETURN(Expr lhs, parse_and());
    while (is_word("or") || is_punct("||")) {
      size_t at = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr rhs, parse_and());
      lhs = binary(ExprOp::kOr, at, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Result<Expr> parse_and() {
    RECUR_ASSIGN_OR_RETURN(Expr lhs, parse_not());
    while (is_word("and") || is_punct("&&")) {
      size_t at = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr rhs, parse_not());
      lhs = binary(ExprOp::kAnd, at, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Result<Expr> parse_not() {
    if (is_word("not") || is_punct("!")) {
      Expr e;
      e.op = ExprOp::kNot;
      e.offset = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr operand, parse_not());
      e.lhs = std::make_shared<const Expr>(std::move(operand));
      return e;
    }
    return parse_cmp();
  }

  Result<Expr> parse_cmp() {
    RECUR_ASSIGN_OR_RETURN(Expr lhs, parse_sum());
    static constexpr std::pair<std::string_view, ExprOp> kOps[] = {
        {">=", ExprOp::kGe}, {"<=", ExprOp::kLe}, {">", ExprOp::kGt},
        {"<", ExprOp::kLt},  {"==", ExprOp::kEq}, {"!=", ExprOp::kNe}};
    for (auto [sym, op] : kOps) {
      if (is_punct(sym)) {
        size_t at = cur_.offset;
        RECUR_RETURN_IF_ERROR(advance());
        RECUR_ASSIGN_OR_RETURN(Expr rhs, parse_sum());
        return binary(op, at, std::move(lhs), std::move(rhs));
      }
    }
    return lhs;
  }

  Result<Expr> parse_sum() {
    RECUR_ASSIGN_OR_RETURN(Expr lhs, parse_prod());
    while (is_punct("+") || is_punct("-")) {
      ExprOp op = cur_.text == "+" ? ExprOp::kAdd : ExprOp::kSub;
      size_t at = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr rhs, parse_prod());
      lhs = binary(op, at, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Result<Expr> parse_prod() {
    RECUR_ASSIGN_OR_RETURN(Expr lhs, parse_unary());
    while (is_punct("*") || is_punct("/")) {
      ExprOp op = cur_.text == "*" ? ExprOp::kMul : ExprOp::kDiv;
      size_t at = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr rhs, parse_unary());
      lhs = binary(op, at, std::move(lhs), std::move(rhs));
    }
    return lhs;
  }

  Result<Expr> parse_unary() {
    if (is_punct("-")) {
      Expr e;
      e.op = ExprOp::kNeg;
      e.offset = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr operand, parse_unary());
      e.lhs = std::make_shared<const Expr>(std::move(operand));
      return e;
    }
    return parse_primary();
  }

  Result<Expr> parse_primary() {
    if (cur_.kind == Tok::kNumber) {
      Expr e;
      e.op = ExprOp::kNumber;
      e.offset = cur_.offset;
      e.number = cur_.number;
      RECUR_RETURN_IF_ERROR(advance());
      return e;
    }
    if (is_punct("(")) {
      size_t open = cur_.offset;
      RECUR_RETURN_IF_ERROR(advance());
      RECUR_ASSIGN_OR_RETURN(Expr inner, parse_or());
      if (!is_punct(")"))
        return fail(cur_.offset, fmt::format("expected ')' to close the '(' at column {}, got {}", open + 1,
                                             describe(cur_)));
      RECUR_RETURN_IF_ERROR(advance());
      return inner;
    }
    if (cur_.kind == Tok::kIdent && !is_word("and") && !is_word("or") && !is_word("not") && !is_word("vs"))
      return parse_call();
    return fail(cur_.offset, fmt::format("expected a number, a metric call such as prefill_tok_s(candidate) or '(', "
                                         "got {}",
                                         describe(cur_)));
  }

  Result<Expr> parse_call() {
    Expr e;
    e.op = ExprOp::kCall;
    e.offset = cur_.offset;
    e.name = cur_.text;
    RECUR_RETURN_IF_ERROR(advance());
    if (!is_punct("("))
      return fail(cur_.offset, fmt::format("expected '(' after the metric name '{}' (metrics are called as "
                                           "{}(arm) or {}(armA vs armB)), got {}",
                                           e.name, e.name, e.name, describe(cur_)));
    RECUR_RETURN_IF_ERROR(advance());
    while (true) {
      if (cur_.kind == Tok::kIdent && !is_word("vs")) {
        e.args.push_back({cur_.text, false, cur_.offset});
      } else if (cur_.kind == Tok::kString) {
        e.args.push_back({cur_.text, true, cur_.offset});
      } else {
        return fail(cur_.offset, fmt::format("expected an arm name{} in the call of '{}', got {}",
                                             e.args.empty() ? "" : " or a \"string\"", e.name, describe(cur_)));
      }
      RECUR_RETURN_IF_ERROR(advance());
      if (is_punct(")")) break;
      if (is_word("vs") || is_punct(",")) {
        RECUR_RETURN_IF_ERROR(advance());
        continue;
      }
      return fail(cur_.offset, fmt::format("expected ')', ',' or 'vs' after '{}' in the call of '{}', got {}",
                                           e.args.back().text, e.name, describe(cur_)));
    }
    RECUR_RETURN_IF_ERROR(advance());
    return e;
  }

  std::string_view text_;
  const ExprSource& source_;
  size_t pos_ = 0;
  Token cur_;
};

}  // namespace

Result<Expr> parse_expr(std::string_view text, const ExprSource& source) { return Parser(text, source).parse(); }

std::string expr_to_string(const Expr& e) {
  switch (e.op) {
    case ExprOp::kNumber: return fmt::format("{:g}", e.number);
    case ExprOp::kCall: {
      std::string s = e.name + "(";
      for (size_t i = 0; i < e.args.size(); ++i) {
        if (i) s += i == 1 && !e.args[1].is_string ? " vs " : ", ";
        s += e.args[i].is_string ? "\"" + e.args[i].text + "\"" : e.args[i].text;
      }
      return s + ")";
    }
    case ExprOp::kNeg: return "(-" + expr_to_string(*e.lhs) + ")";
    case ExprOp::kNot: return "(not " + expr_to_string(*e.lhs) + ")";
    default:
      return fmt::format("({} {} {})", expr_to_string(*e.lhs), expr_op_symbol(e.op), expr_to_string(*e.rhs));
  }
}

}  // namespace recur::gate
