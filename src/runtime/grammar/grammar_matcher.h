// Runs a compiled grammar (grammar.h) over UTF-8 bytes, one byte at a time, keeping every
// way the text so far can still continue: a set of stacks, each a chain of positions in
// the grammar whose top is the character set the next code point must be in. Stacks share
// their tails (nodes in one arena, linked to their parent), so a step costs the stacks it
// touches, not their depth. Trial steps (a token mask tries every token from one state)
// append to the arena and are undone by rewind(); states are values into it.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace edge::grammar {

class Matcher {
 public:
  struct State {
    uint32_t begin = 0, end = 0;  // the stacks' tops: leaf node ids, leaves_[begin, end)
    bool accept = false;          // the text so far is a whole match of the start rule
    uint8_t need = 0;             // continuation bytes of a UTF-8 sequence still to come
    uint8_t width = 0;            // that sequence's length
    uint32_t partial = 0;         // its code point bits so far
    int32_t dist = 0;             // fewest code points that complete a match (0: accept)
    bool dead() const { return begin == end && !accept; }
  };
  struct Mark {
    size_t nodes = 0, leaves = 0;
  };

  explicit Matcher(const Grammar& g);

  const State& initial() const { return initial_; }
  // The state after one more byte; dead() when no text continues the match (a malformed
  // UTF-8 sequence included). A sequence in progress is alive while some stack can take a
  // code point that begins with it.
  State advance(const State& s, uint8_t byte);
  Mark mark() const { return {nodes_.size(), leaves_.size()}; }
  void rewind(const Mark& m);
  // Keeps only what `s` reaches (after many committed steps), renumbering it in place.
  void compact(State& s);
  size_t arena_size() const { return nodes_.size(); }
  // Equal for states with the same stacks and the same UTF-8 sequence in progress, however
  // they were reached (the key of a token-mask cache).
  uint64_t signature(const State& s) const;

 private:
  struct Node {
    uint32_t pos = 0;     // element in Grammar::elems (never a kEnd)
    uint32_t parent = 0;  // kNone at the bottom
    int32_t dist = 0;     // fewest code points to finish this stack
    uint64_t hash = 0;    // of the whole chain, to merge equal stacks
  };
  static constexpr uint32_t kNone = UINT32_MAX;

  uint32_t new_node(uint32_t pos, uint32_t parent);
  // Pushes the leaves `node` expands to (a set: itself; a rule: its alternatives).
  void expand(uint32_t node, State& out, int depth);
  // Continues after the element at `pos` was matched, in the stack below `parent`.
  void follow(uint32_t pos, uint32_t parent, State& out, int depth);
  void add_leaf(uint32_t node, State& out);
  State step_code_point(const State& s, uint32_t cp);
  bool viable(const State& s, uint32_t lo, uint32_t hi) const;

  const Grammar& g_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> leaves_;
  std::vector<uint64_t> seen_;  // hashes of the leaves of the state being built
  State initial_;
};

}  // namespace edge::grammar
