// Context-free grammars over Unicode code points, written in GBNF (llama.cpp's grammar
// notation: `name ::= alternatives`, "literals", [character classes], `.`, groups, and the
// postfix operators * + ? {m} {m,} {m,n}; `#` comments). Constrained decoding runs on the
// compiled form: every rule a list of alternatives, every alternative a sequence of
// elements (a character set or a reference to a rule) ended by kEnd. Repetitions and groups
// become rules of their own at compile time, so the matcher (grammar_matcher.h) only ever
// sees sets, references and ends.
//
// Compiling refuses what the matcher cannot run: an undefined rule, left recursion (a rule
// that can reach itself before consuming a character), a rule that matches nothing at all.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace edge::grammar {

// A set of code points: sorted, disjoint, inclusive ranges, possibly negated.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;
  bool contains(uint32_t cp) const;
  // Whether some code point in [lo, hi] is in the set (a partial UTF-8 sequence's range).
  bool intersects(uint32_t lo, uint32_t hi) const;
};

struct Element {
  enum Kind : uint8_t { kSet, kRef, kEnd };
  Kind kind = kEnd;
  uint32_t arg = 0;  // kSet: index into sets; kRef: the rule
};

struct Grammar {
  std::vector<Element> elems;                // every alternative, each ended by kEnd
  std::vector<std::vector<uint32_t>> rules;  // per rule: where each alternative starts in elems
  std::vector<std::string> names;            // per rule ("root", or generated: "value-3")
  std::vector<CharSet> sets;
  uint32_t root = 0;
  // Fewest code points that finish the alternative from an element on (the element
  // included), and that a whole rule matches: how far a state is from a complete output.
  std::vector<int32_t> rest_len;
  std::vector<int32_t> rule_min_len;

  uint32_t rule_of(std::string_view name) const;  // names.size() when absent
};

// GBNF text to its compiled form; `root_rule` names the start ("root" by default).
// Errors name the line and what is wrong.
Expected<Grammar> compile_gbnf(std::string_view text, std::string_view root_rule = "root");

// A GBNF literal for `s` (quoted, with \", \\ and control characters escaped).
std::string gbnf_literal(std::string_view s);

}  // namespace edge::grammar
