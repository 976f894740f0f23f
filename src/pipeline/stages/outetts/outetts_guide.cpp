#include "pipeline/stages/outetts/outetts_guide.h"

#include <algorithm>
#include <cmath>

namespace edge::pipeline {

OuteTtsGuide::OuteTtsGuide(const OuteTtsVocab& vocab, std::vector<std::vector<int32_t>> words,
                           std::vector<int32_t> newline, const OuteTtsGuideOptions& o)
    : vocab_(vocab), words_(std::move(words)), newline_(std::move(newline)), options_(o) {
  words_.erase(std::remove_if(words_.begin(), words_.end(), [](const auto& w) { return w.empty(); }),
               words_.end());
  for (int32_t i = 0; i < std::min(vocab_.n_codes, options_.codebook); ++i) codes_.push_back(vocab_.code0 + i);
  time_min_ = INT32_MAX;
  int32_t time_max = -1;
  for (const auto& [id, s] : vocab_.times) {
    if (s > options_.max_word_seconds) continue;
    times_.push_back(id);
    time_min_ = std::min(time_min_, id), time_max = std::max(time_max, id);
  }
  if (times_.empty() && !vocab_.times.empty()) {  // every duration is too long: the shortest
    auto shortest = std::min_element(vocab_.times.begin(), vocab_.times.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
    times_ = {shortest->first};
    time_min_ = time_max = shortest->first;
  }
  seconds_.assign(static_cast<size_t>(time_max - time_min_ + 1), 0.0);
  for (const auto& [id, s] : vocab_.times)
    if (id >= time_min_ && id <= time_max) seconds_[id - time_min_] = s;
  reset();
}

void OuteTtsGuide::reset() {
  state_ = words_.empty() ? State::kEnd : State::kWord;
  word_ = pos_ = 0;
  n_codes_ = target_codes_ = 0;
  consumed_ = 0;
}

int64_t OuteTtsGuide::max_tokens() const {
  const int64_t max_codes =
      static_cast<int64_t>(std::ceil(options_.max_word_seconds * options_.codes_per_second)) + 1;
  int64_t n = 1;  // <|audio_end|>
  for (const auto& w : words_)
    n += static_cast<int64_t>(w.size() + newline_.size()) + 3 + max_codes;
  return n;
}

// Advances the layout by one generated token (one the guide allowed).
void OuteTtsGuide::consume(int32_t id) {
  switch (state_) {
    case State::kWord:
      if (++pos_ == words_[word_].size()) state_ = State::kTime, pos_ = 0;
      break;
    case State::kTime: {
      const size_t k = static_cast<size_t>(id - time_min_);
      const double s = id >= time_min_ && k < seconds_.size() ? seconds_[k] : 0.0;
      target_codes_ = std::max<int64_t>(1, std::llround(s * options_.codes_per_second));
      n_codes_ = 0;
      state_ = vocab_.version == OuteTtsVersion::kV0_2 ? State::kCodeStart : State::kCodes;
      break;
    }
    case State::kCodeStart:
      state_ = State::kCodes;
      break;
    case State::kCodes:
      if (vocab_.is_code(id)) {
        ++n_codes_;
      } else {  // the end of the word's codes
        state_ = newline_.empty() ? State::kWord : State::kNewline;
        pos_ = 0;
        if (state_ == State::kWord && ++word_ == words_.size()) state_ = State::kEnd;
      }
      break;
    case State::kNewline:
      if (++pos_ == newline_.size()) {
        pos_ = 0;
        state_ = ++word_ == words_.size() ? State::kEnd : State::kWord;
      }
      break;
    case State::kEnd:
      break;
  }
}

void OuteTtsGuide::fill_allowed() {
  allowed_.clear();
  switch (state_) {
    case State::kWord:
      allowed_.push_back(words_[word_][pos_]);
      break;
    case State::kTime:
      allowed_ = times_;
      break;
    case State::kCodeStart:
      allowed_.push_back(vocab_.code_start);
      break;
    case State::kCodes:
      if (n_codes_ < target_codes_) allowed_ = codes_;
      if (n_codes_ > 0) allowed_.push_back(vocab_.code_end);
      break;
    case State::kNewline:
      allowed_.push_back(newline_[pos_]);
      break;
    case State::kEnd:
      allowed_.push_back(vocab_.audio_end);
      break;
  }
}

std::span<const int32_t> OuteTtsGuide::allowed(std::span<const int32_t> generated) {
  if (generated.size() < consumed_) reset();  // replayed from the start (preemption)
  for (; consumed_ < generated.size(); ++consumed_) consume(generated[consumed_]);
  fill_allowed();
  return allowed_;
}

}  // namespace edge::pipeline
