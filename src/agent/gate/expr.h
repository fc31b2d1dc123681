// Gate conditions: a small expression language over metric calls (docs/agent.md, "Conditions").
//
//   prefill_tok_s(candidate) >= 0.95 * prefill_tok_s(baseline)
//   logits_max_rel_err(tp4 vs tp1) <= 1e-4 and tokens_equal(tp4, tp1)
//
// Grammar (lowest precedence first):
//   or      := and  (("or" | "||") and)*
//   and     := not  (("and" | "&&") not)*
//   not     := ("not" | "!") not | cmp
//   cmp     := sum  ((">=" | "<=" | ">" | "<" | "==" | "!=") sum)?     (comparisons do not chain)
//   sum     := prod (("+" | "-") prod)*
//   prod    := unary (("*" | "/") unary)*
//   unary   := "-" unary | primary
//   primary := NUMBER | call | "(" or ")"
//   call    := IDENT "(" arg (("vs" | ",") arg)* ")"      arg := IDENT | "string"
// parse_expr() checks syntax only; which names are metrics and arms, and whether a sub-expression
// is a number or a truth value, is checked by check_condition() (gate/metrics.h). Pure functions;
// thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace recur::gate {

// Where an expression's text sits, for messages "gate.toml:14:31: condition 2: expected ...".
struct ExprSource {
  std::string file;   // the spec's path ("" for text given on the command line)
  int line = 0;       // 1-based line of the expression's first character; 0 when unknown
  int column = 0;     // 1-based column of that character; 0 when the text's position is unknown
  std::string label;  // "condition 2"
  // "file:line:col: label: message", with the expression and a caret under `offset` below.
  Error error(std::string_view text, size_t offset, std::string_view message) const;
};

enum class ExprOp {
  kNumber, kCall,                       // leaves
  kNeg, kNot,                           // unary
  kAdd, kSub, kMul, kDiv,               // arithmetic
  kLt, kLe, kGt, kGe, kEq, kNe,         // comparisons
  kAnd, kOr,                            // logic
};
std::string_view expr_op_symbol(ExprOp op);  // "+", ">=", "and", ...
bool is_comparison(ExprOp op);

struct CallArg {
  std::string text;
  bool is_string = false;  // a quoted "string" rather than a name
  size_t offset = 0;       // byte offset in the expression text
};

struct Expr {
  ExprOp op = ExprOp::kNumber;
  size_t offset = 0;  // byte offset of this node's first character (the operator for binaries)
  double number = 0;                    // kNumber
  std::string name;                     // kCall: the metric
  std::vector<CallArg> args;            // kCall: arms and strings, in order
  std::shared_ptr<const Expr> lhs, rhs;  // unary: lhs only
};

// Parses one condition. Errors name the position (via `source`) and what was expected.
Result<Expr> parse_expr(std::string_view text, const ExprSource& source);

// Back to text with full parentheses around every binary operation (tests, notes).
std::string expr_to_string(const Expr& e);

}  // namespace recur::gate
