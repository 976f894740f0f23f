// Splits model output into reasoning (<think>...</think>) and the answer, incrementally:
// pieces may cut a tag anywhere, so a tail that could be the start of a tag is held back
// until the next piece. Pushing the same text in any split gives the same concatenation.
#pragma once

#include <string>
#include <string_view>

namespace edge::server {

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningSplitter {
 public:
  // start_in_reasoning: the prompt already opened the block (it ends with "<think>"), so
  // the output is reasoning until "</think>".
  explicit ReasoningSplitter(bool start_in_reasoning = false);
  ReasoningDelta push(std::string_view text);
  // End of output: releases what was held back (an unclosed block stays reasoning).
  ReasoningDelta finish();

 private:
  enum class State { kStart, kReasoning, kContent };
  State state_;
  bool strip_space_ = false;  // drop the whitespace right after "</think>"
  std::string pending_;
};

// True if the rendered prompt ends inside an opened <think> block.
bool prompt_opens_reasoning(std::string_view prompt);

}  // namespace edge::server
