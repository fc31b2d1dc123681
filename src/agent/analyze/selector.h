// Selectors: which zones an analysis looks at, in a compact text form for the CLI.
//
//   name~^nccl            regex (RE2 syntax, searched anywhere) on the event name
//   name=step             exact name
//   cat=kernel            category (cat~, cat!= and cat!~ as well)
//   thread=prefill        thread name (else the tid's text); thread~^rank
//   tid=3  pid=7          thread / process id (or its text label in Kineto traces)
//   process~python        process name
//   stream=7              Kineto's args.stream (an integer)
//   arg:layer=7           an arg's value (numbers compare as numbers); arg:layer alone: present
//   path=layer.7/attention  zone path ending in these segments (zone_tree.h)
//   path~^step/layer\.[0-9]+/attention$   regex on the whole zone path
//   *                     every zone
//
// Regexes are RE2 (github.com/google/re2/wiki/Syntax): linear time in the text, no recursion, so
// any pattern on any name is safe (std::regex overflowed the stack on long Kineto names); no
// backreferences or lookaround. A bad pattern is an error naming it and RE2's message.
// Terms are joined by commas (AND); every key takes =, !=, ~ and !~. A comma inside (), [] or
// {} of a regex, or escaped as "\,", does not split. Errors name the selector, the 1-based
// column and what was expected:
//   selector 'nam=x': column 1: unknown key 'nam' (expected name, cat, ...)
// Parsing is pure; a Selector is an immutable value (thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/zone_tree.h"
#include "core/status.h"

namespace re2 {
class RE2;
}

namespace recur::analyze {

enum class SelectorKey { kName, kCat, kThread, kTid, kPid, kProcess, kStream, kArg, kPath };
enum class SelectorOp { kEqual, kNotEqual, kMatch, kNoMatch, kHas };

struct SelectorTerm {
  SelectorKey key = SelectorKey::kName;
  std::string arg_key;          // for kArg
  SelectorOp op = SelectorOp::kEqual;
  std::string value;
  std::optional<int64_t> number;            // value as an integer, if it is one
  std::shared_ptr<const re2::RE2> regex;  // for kMatch / kNoMatch
  size_t column = 1;                        // 1-based, for messages
};

class Selector {
 public:
  // Parses the text form above. Errors are kInvalidArgument (a usage error at the CLI).
  static Result<Selector> parse(std::string_view text);
  // Matches every zone.
  static Selector all();

  const std::string& text() const { return text_; }
  const std::vector<SelectorTerm>& terms() const { return terms_; }
  bool matches_everything() const { return terms_.empty(); }

 private:
  std::string text_;
  std::vector<SelectorTerm> terms_;
};

// A selector bound to one trace. Each term's answer is cached per interned string, track or
// path, so a regex runs once per distinct value, not once per event. Not thread-safe (the
// caches); use one per thread.
class ZoneMatcher {
 public:
  ZoneMatcher(const Selector& selector, const ZoneTree& tree);
  bool matches(uint32_t zone) const;
  // Every matching zone, in zone order.
  std::vector<uint32_t> select() const;

 private:
  bool term_matches(size_t k, uint32_t zone) const;
  const Selector* selector_;
  const ZoneTree* tree_;
  // Per term: -1 unknown, 0 no, 1 yes, indexed by string id, track or path (whichever the
  // term's key is a function of).
  mutable std::vector<std::vector<int8_t>> memo_;
};

}  // namespace recur::analyze
