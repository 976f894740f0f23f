// The matcher over a whole text, for the grammar tests.
#pragma once

#include <string_view>

#include "runtime/grammar/grammar_matcher.h"

namespace edge::grammar {

// 1: a whole match; 0: a live prefix; -1: dead.
inline int run(const Grammar& g, std::string_view text) {
  Matcher m(g);
  Matcher::State s = m.initial();
  for (unsigned char c : text) {
    s = m.advance(s, c);
    if (s.dead()) return -1;
  }
  return s.accept ? 1 : 0;
}

}  // namespace edge::grammar
