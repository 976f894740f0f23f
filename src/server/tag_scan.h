// Small helpers for the incremental output parsers (reasoning splitter, tool-call parser):
// text arrives in arbitrary pieces, so a tag like "<tool_call>" may be split across pieces
// and the parsers hold back any tail that could still become one.
#pragma once

#include <string_view>

namespace edge::server {

// Length of the longest suffix of `text` that is a proper prefix of `tag` (0 if none):
// those bytes must be held back until the next piece says whether the tag follows.
inline size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  const size_t max = std::min(text.size(), tag.size() - 1);
  for (size_t len = max; len > 0; --len)
    if (text.substr(text.size() - len) == tag.substr(0, len)) return len;
  return 0;
}

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// Length of the run of whitespace at the end of `text`.
inline size_t trailing_space(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && is_space(text[text.size() - 1 - n])) ++n;
  return n;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace edge::server
