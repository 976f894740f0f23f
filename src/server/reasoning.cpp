#include "server/reasoning.h"

#include "server/tag_scan.h"

namespace edge::server {
namespace {
constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
}  // namespace

ReasoningSplitter::ReasoningSplitter(bool start_in_reasoning)
    : state_(start_in_reasoning ? State::kReasoning : State::kStart) {}

ReasoningDelta ReasoningSplitter::push(std::string_view text) {
  pending_.append(text);
  ReasoningDelta out;
  while (!pending_.empty()) {
    if (state_ == State::kStart) {
      // "<think>" counts only as the first non-space output; anything else is the answer.
      const std::string_view body = trim(pending_);
      if (body.size() >= kOpen.size() && body.substr(0, kOpen.size()) == kOpen) {
        pending_.erase(0, pending_.find(kOpen) + kOpen.size());
        state_ = State::kReasoning;
        continue;
      }
      if (kOpen.substr(0, body.size()) == body) break;  // still could become "<think>"
      state_ = State::kContent;
      continue;
    }
    if (state_ == State::kReasoning) {
      const size_t p = pending_.find(kClose);
      if (p == std::string::npos) {
        const size_t hold = partial_tag_suffix(pending_, kClose);
        out.reasoning.append(pending_, 0, pending_.size() - hold);
        pending_.erase(0, pending_.size() - hold);
        break;
      }
      out.reasoning.append(pending_, 0, p);
      pending_.erase(0, p + kClose.size());
      state_ = State::kContent;
      strip_space_ = true;
      continue;
    }
    // kContent
    if (strip_space_) {
      size_t n = 0;
      while (n < pending_.size() && is_space(pending_[n])) ++n;
      pending_.erase(0, n);
      if (pending_.empty()) break;
      strip_space_ = false;
    }
    out.content.append(pending_);
    pending_.clear();
  }
  return out;
}

ReasoningDelta ReasoningSplitter::finish() {
  ReasoningDelta out;
  if (state_ == State::kReasoning) {
    out.reasoning = std::move(pending_);
  } else if (!(state_ == State::kContent && strip_space_)) {
    out.content = std::move(pending_);
  }
  pending_.clear();
  return out;
}

bool prompt_opens_reasoning(std::string_view prompt) {
  // Only a block opened at the very end counts: "<think>\n\n</think>" (thinking off) does not.
  prompt = trim(prompt);
  return prompt.size() >= kOpen.size() && prompt.substr(prompt.size() - kOpen.size()) == kOpen;
}

}  // namespace edge::server
