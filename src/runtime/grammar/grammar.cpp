// GBNF parsing (text -> per rule, alternatives of items) and lowering (items -> elements,
// repetitions and groups -> rules of their own), then the checks and the length tables.
#include "runtime/grammar/grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

namespace edge::grammar {

bool CharSet::contains(uint32_t cp) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges)
    if (cp >= lo && cp <= hi) {
      in = true;
      break;
    }
  return in != negated;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges)
      if (a <= hi && b >= lo) return true;
    return false;
  }
  // Some point of [lo, hi] outside every range: walk the ranges that cover from lo upwards.
  uint32_t at = lo;
  bool moved = true;
  while (moved) {
    moved = false;
    for (const auto& [a, b] : ranges)
      if (a <= at && b >= at) {
        if (b >= hi) return false;
        at = b + 1;
        moved = true;
      }
  }
  return at <= hi;
}

uint32_t Grammar::rule_of(std::string_view name) const {
  for (uint32_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  return static_cast<uint32_t>(names.size());
}

std::string gbnf_literal(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

constexpr int32_t kInf = std::numeric_limits<int32_t>::max() / 4;
constexpr size_t kMaxRules = 20000;
constexpr size_t kMaxElements = size_t{1} << 20;  // a request's grammar stays small in memory
constexpr int kMaxNesting = 64;  // parenthesised groups inside one another

// One parsed item of a sequence: a set, a rule named, or a group; with its repetition.
struct Item {
  enum Kind { kSet, kRef, kGroup } kind = kSet;
  CharSet set;
  std::string name;
  std::vector<std::vector<Item>> alts;  // kGroup
  int min = 1, max = 1;                 // max -1: unbounded
};
using Alternatives = std::vector<std::vector<Item>>;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Status parse(std::vector<std::pair<std::string, Alternatives>>& out) {
    for (;;) {
      space(true);
      if (at_end()) return Status();
      const size_t line = line_;
      std::string name = parse_name();
      if (name.empty()) return error("a rule name");
      space(false);
      if (!eat("::=")) return error("'::=' after the rule name '" + name + "'");
      space(true);
      Alternatives alts;
      RETURN_IF_ERROR(parse_alternates(alts, 0));
      for (const auto& [n, a] : out)
        if (n == name)
          return Status::invalid_argument(
              fmt::format("grammar line {}: rule '{}' is defined twice", line, name));
      out.emplace_back(std::move(name), std::move(alts));
      if (!at_end() && peek() != '\n') return error("the end of the line");
    }
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[i_]; }
  bool eat(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  Status error(const std::string& expected) const {
    std::string near(s_.substr(i_, 24));
    for (char& c : near)
      if (c == '\n') c = ' ';
    return Status::invalid_argument(
        fmt::format("grammar line {}: expected {} at '{}'", line_, expected, near));
  }
  void space(bool newlines) {
    while (!at_end()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && s_[i_] != '\n') ++i_;
      } else if (c == '\n' && newlines) {
        ++i_;
        ++line_;
      } else {
        return;
      }
    }
  }
  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string parse_name() {
    const size_t from = i_;
    while (!at_end() && name_char(s_[i_])) ++i_;
    return std::string(s_.substr(from, i_ - from));
  }

  // One code point of UTF-8 text, or an escape; false at a malformed one.
  bool code_point(uint32_t& cp) {
    if (at_end()) return false;
    const auto c = static_cast<unsigned char>(s_[i_]);
    if (c == '\\') return escape(cp);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + n > s_.size()) return false;
    cp = n == 1 ? c : c & (0x7f >> n);
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s_[i_ + k]);
      if ((b >> 6) != 2) return false;
      cp = (cp << 6) | (b & 0x3f);
    }
    if (c == '\n') ++line_;
    i_ += n;
    return true;
  }
  bool hex(int digits, uint32_t& cp) {
    cp = 0;
    for (int k = 0; k < digits; ++k, ++i_) {
      const char h = peek();
      const int v = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (v < 0) return false;
      cp = cp * 16 + static_cast<uint32_t>(v);
    }
    return true;
  }
  bool escape(uint32_t& cp) {
    ++i_;  // the backslash
    const char e = peek();
    ++i_;
    switch (e) {
      case 'n':
        cp = '\n';
        return true;
      case 'r':
        cp = '\r';
        return true;
      case 't':
        cp = '\t';
        return true;
      case 'x':
        return hex(2, cp);
      case 'u':
        return hex(4, cp);
      case 'U':
        return hex(8, cp);
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '/':
      case '^':
      case '\'':
        cp = static_cast<uint32_t>(e);
        return true;
      default:
        return false;
    }
  }

  Status parse_literal(std::vector<Item>& seq) {
    ++i_;  // the opening quote
    while (peek() != '"') {
      uint32_t cp = 0;
      if (at_end() || !code_point(cp)) return error("a character or the closing '\"' of a literal");
      Item it;
      it.set.ranges = {{cp, cp}};
      seq.push_back(std::move(it));
    }
    ++i_;
    return Status();
  }
  Status parse_class(Item& it) {
    ++i_;  // [
    if (peek() == '^') {
      it.set.negated = true;
      ++i_;
    }
    while (peek() != ']') {
      uint32_t lo = 0, hi = 0;
      if (at_end() || !code_point(lo)) return error("a character or the closing ']' of a class");
      hi = lo;
      if (peek() == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        ++i_;
        if (!code_point(hi) || hi < lo) return error("a range's upper end");
      }
      it.set.ranges.emplace_back(lo, hi);
    }
    ++i_;
    std::sort(it.set.ranges.begin(), it.set.ranges.end());
    return Status();
  }
  Status parse_count(Item& it) {
    ++i_;  // {
    space(false);
    auto number = [&](int& v) {
      const size_t from = i_;
      v = 0;
      while (peek() >= '0' && peek() <= '9' && v < 100000) v = v * 10 + (s_[i_++] - '0');
      return i_ > from;
    };
    if (!number(it.min)) return error("a repetition count");
    it.max = it.min;
    space(false);
    if (eat(",")) {
      space(false);
      it.max = -1;
      if (peek() != '}' && !number(it.max)) return error("a repetition bound");
      space(false);
    }
    if (!eat("}")) return error("'}'");
    if (it.max >= 0 && it.max < it.min) return error("a bound not below the count");
    return Status();
  }

  // One element with its postfix; literals give one item per code point.
  Status parse_atom(std::vector<Item>& seq, int depth) {
    const char c = peek();
    const size_t first = seq.size();
    if (c == '"') {
      RETURN_IF_ERROR(parse_literal(seq));
      if (seq.size() == first) {  // "": the empty string
        Item empty;
        empty.kind = Item::kGroup;
        empty.alts = {{}};
        seq.push_back(std::move(empty));
      }
    } else if (c == '[') {
      Item it;
      RETURN_IF_ERROR(parse_class(it));
      seq.push_back(std::move(it));
    } else if (c == '.') {
      ++i_;
      Item it;
      it.set.negated = true;  // nothing excluded: any code point
      seq.push_back(std::move(it));
    } else if (c == '(') {
      if (depth >= kMaxNesting) return error("fewer nested groups");
      ++i_;
      space(true);
      Item it;
      it.kind = Item::kGroup;
      RETURN_IF_ERROR(parse_alternates(it.alts, depth + 1));
      space(true);
      if (!eat(")")) return error("')'");
      seq.push_back(std::move(it));
    } else if (name_char(c)) {
      Item it;
      it.kind = Item::kRef;
      it.name = parse_name();
      seq.push_back(std::move(it));
    } else {
      return error("a literal, a class, '.', '(' or a rule name");
    }
    const char op = peek();
    if (op != '*' && op != '+' && op != '?' && op != '{') return Status();
    // The operator applies to the whole atom: a literal of several characters is grouped.
    if (seq.size() - first > 1) {
      Item group;
      group.kind = Item::kGroup;
      group.alts.emplace_back(
          std::make_move_iterator(seq.begin() + static_cast<std::ptrdiff_t>(first)),
          std::make_move_iterator(seq.end()));
      seq.resize(first);
      seq.push_back(std::move(group));
    }
    Item& last = seq.back();
    if (op == '{') {
      RETURN_IF_ERROR(parse_count(last));
    } else {
      ++i_;
      last.min = op == '+' ? 1 : 0;
      last.max = op == '?' ? 1 : -1;
    }
    return Status();
  }

  Status parse_sequence(std::vector<Item>& seq, int depth) {
    for (;;) {
      space(depth > 0);
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n') return Status();
      RETURN_IF_ERROR(parse_atom(seq, depth));
    }
  }
  Status parse_alternates(Alternatives& alts, int depth) {
    for (;;) {
      alts.emplace_back();
      RETURN_IF_ERROR(parse_sequence(alts.back(), depth));
      if (!eat("|")) return Status();
      space(true);
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  size_t line_ = 1;
};

// Items to elements: named rules keep their ids, groups and repetitions get new rules.
class Lowering {
 public:
  Status run(const std::vector<std::pair<std::string, Alternatives>>& parsed, Grammar& g) {
    for (const auto& [name, alts] : parsed) id_of(name);
    defined_ = rules_.size();
    for (size_t r = 0; r < parsed.size(); ++r)
      RETURN_IF_ERROR(lower_rule(static_cast<uint32_t>(r), parsed[r].second));
    for (const auto& [name, used] : used_)
      if (id_of(name) >= defined_)
        return Status::invalid_argument(
            fmt::format("grammar: rule '{}' is used but not defined", name));
    // Flatten.
    g.rules.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (const auto& alt : rules_[r]) {
        g.rules[r].push_back(static_cast<uint32_t>(g.elems.size()));
        g.elems.insert(g.elems.end(), alt.begin(), alt.end());
        g.elems.push_back(Element{Element::kEnd, 0});
      }
    g.names = std::move(names_);
    g.sets = std::move(sets_);
    return Status();
  }

 private:
  uint32_t id_of(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(rules_.size());
    ids_[name] = id;
    names_.push_back(name);
    rules_.emplace_back();
    return id;
  }
  Expected<uint32_t> new_rule(const std::string& base) {
    if (rules_.size() >= kMaxRules)
      return Status::invalid_argument(
          fmt::format("grammar: more than {} rules once repetitions are expanded", kMaxRules));
    return id_of(fmt::format("{}-{}", base, rules_.size()));
  }
  Status lower_rule(uint32_t r, const Alternatives& alts) {
    std::vector<std::vector<Element>> out;
    const std::string base = names_[r];  // a copy: new rules grow names_
    for (const auto& seq : alts) {
      std::vector<Element> elems;
      for (const Item& it : seq) RETURN_IF_ERROR(lower_item(base, it, elems));
      out.push_back(std::move(elems));
    }
    rules_[r] = std::move(out);
    return Status();
  }
  // The element that matches `it` once.
  Expected<Element> once(const std::string& base, const Item& it) {
    if (it.kind == Item::kSet) {
      sets_.push_back(it.set);
      return Element{Element::kSet, static_cast<uint32_t>(sets_.size() - 1)};
    }
    if (it.kind == Item::kRef) {
      used_[it.name] = true;
      return Element{Element::kRef, id_of(it.name)};
    }
    ASSIGN_OR_RETURN(uint32_t g, new_rule(base));
    RETURN_IF_ERROR(lower_rule(g, it.alts));
    return Element{Element::kRef, g};
  }
  Status lower_item(const std::string& base, const Item& it, std::vector<Element>& out) {
    if (it.min == 0 && it.max == 0) return Status();
    ASSIGN_OR_RETURN(Element e, once(base, it));
    elements_ += static_cast<size_t>(it.min) + 1;
    if (elements_ > kMaxElements)
      return Status::invalid_argument(
          fmt::format("grammar: more than {} elements once repetitions are expanded", kMaxElements));
    for (int k = 0; k < it.min; ++k) out.push_back(e);
    if (it.max == it.min) return Status();
    if (it.max < 0) {  // star ::= e star | (empty)
      ASSIGN_OR_RETURN(uint32_t star, new_rule(base));
      rules_[star] = {{e, Element{Element::kRef, star}}, {}};
      out.push_back(Element{Element::kRef, star});
      return Status();
    }
    // Up to k more: opt_k ::= e opt_(k-1) | (empty); opt_1 ::= e | (empty).
    uint32_t prev = 0;
    for (int k = 1; k <= it.max - it.min; ++k) {
      ASSIGN_OR_RETURN(uint32_t opt, new_rule(base));
      rules_[opt] = k == 1
                        ? std::vector<std::vector<Element>>{{e}, {}}
                        : std::vector<std::vector<Element>>{{e, Element{Element::kRef, prev}}, {}};
      prev = opt;
    }
    out.push_back(Element{Element::kRef, prev});
    return Status();
  }

  std::map<std::string, uint32_t> ids_;
  std::map<std::string, bool> used_;
  std::vector<std::string> names_;
  std::vector<std::vector<std::vector<Element>>> rules_;
  std::vector<CharSet> sets_;
  size_t defined_ = 0;
  size_t elements_ = 0;  // emitted so far, repetitions counted
};

// Fewest code points per rule (kInf: matches nothing), by fixpoint; then per element.
void lengths(Grammar& g) {
  g.rule_min_len.assign(g.rules.size(), kInf);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r)
      for (uint32_t start : g.rules[r]) {
        int32_t n = 0;
        for (uint32_t p = start; g.elems[p].kind != Element::kEnd; ++p)
          n = std::min(kInf,
                       n + (g.elems[p].kind == Element::kSet ? 1 : g.rule_min_len[g.elems[p].arg]));
        if (n < g.rule_min_len[r]) {
          g.rule_min_len[r] = n;
          changed = true;
        }
      }
  }
  g.rest_len.assign(g.elems.size(), 0);
  for (size_t p = g.elems.size(); p-- > 0;) {
    const Element& e = g.elems[p];
    if (e.kind == Element::kEnd) continue;
    const int32_t own = e.kind == Element::kSet ? 1 : g.rule_min_len[e.arg];
    g.rest_len[p] = std::min(kInf, own + g.rest_len[p + 1]);
  }
}

// A rule that can reach itself before consuming a character would expand forever.
Status check_left_recursion(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) nullable[r] = g.rule_min_len[r] == 0;
  // first[r]: the rules r may start with (through nullable prefixes).
  std::vector<std::vector<uint32_t>> first(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r)
    for (uint32_t start : g.rules[r])
      for (uint32_t p = start; g.elems[p].kind == Element::kRef; ++p) {
        first[r].push_back(g.elems[p].arg);
        if (!nullable[g.elems[p].arg]) break;
      }
  for (size_t r = 0; r < g.rules.size(); ++r) {
    std::vector<bool> seen(g.rules.size());
    std::vector<uint32_t> todo = first[r];
    while (!todo.empty()) {
      const uint32_t q = todo.back();
      todo.pop_back();
      if (q == r)
        return Status::invalid_argument(
            fmt::format("grammar: rule '{}' is left-recursive", g.names[r]));
      if (seen[q]) continue;
      seen[q] = true;
      todo.insert(todo.end(), first[q].begin(), first[q].end());
    }
  }
  return Status();
}

}  // namespace

Expected<Grammar> compile_gbnf(std::string_view text, std::string_view root_rule) {
  std::vector<std::pair<std::string, Alternatives>> parsed;
  Parser parser(text);
  RETURN_IF_ERROR(parser.parse(parsed));
  Grammar g;
  Lowering lowering;
  RETURN_IF_ERROR(lowering.run(parsed, g));
  g.root = g.rule_of(root_rule);
  if (g.root >= g.names.size() || g.root >= parsed.size())
    return Status::invalid_argument(fmt::format("grammar: no rule '{}' (the start)", root_rule));
  lengths(g);
  for (size_t r = 0; r < g.rules.size(); ++r)
    if (g.rule_min_len[r] >= kInf)
      return Status::invalid_argument(
          fmt::format("grammar: rule '{}' matches no finite text", g.names[r]));
  RETURN_IF_ERROR(check_left_recursion(g));
  return g;
}

}  // namespace edge::grammar
