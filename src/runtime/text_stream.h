// Per-request output helpers of the engine: stop strings applied to streamed text (text
// that may be the start of a stop string is held back until it is decided), and
// log-probabilities of the chosen token with the best alternatives.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace edge {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);
  // Appends text; returns what can be emitted now. Sets *stopped when a stop string was
  // found: the returned text ends just before it and later input is ignored.
  std::string push(const std::string& text, bool* stopped);
  // Everything still held back (at the end of generation without a stop).
  std::string flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

// log softmax(logits)[chosen] and the `top` most likely tokens with their log-probabilities
// (best first; ties by lower id).
float token_logprob(std::span<const float> logits, int32_t chosen,
                    std::vector<std::pair<int32_t, float>>* top, int32_t n_top);

}  // namespace edge
