#include "runtime/text_stream.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/sampler.h"

namespace edge {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopStringFilter::push(const std::string& text, bool* stopped) {
  *stopped = stopped_;
  if (stopped_) return {};
  held_ += text;
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    std::string out = held_.substr(0, first);
    held_.clear();
    stopped_ = *stopped = true;
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string (it starts at
  // a character boundary: a stop string's first byte does).
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k)
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  std::string out = held_.substr(0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return out;
}

std::string StopStringFilter::flush() {
  std::string out;
  if (!stopped_) out.swap(held_);
  held_.clear();
  return out;
}

float token_logprob(std::span<const float> logits, int32_t chosen,
                    std::vector<std::pair<int32_t, float>>* top, int32_t n_top) {
  // NaN / inf logits (a broken model) must not make the order below undefined.
  auto key = [&](int32_t i) { return finite_logit(logits[static_cast<size_t>(i)]); };
  float mx = -std::numeric_limits<float>::max();
  for (float v : logits) mx = std::max(mx, finite_logit(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(finite_logit(v)) - mx);
  const float log_z = mx + static_cast<float>(std::log(sum));
  if (top != nullptr) {
    top->clear();
    const int32_t n = std::min<int32_t>(std::max(n_top, 0), static_cast<int32_t>(logits.size()));
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
      return key(a) > key(b) || (key(a) == key(b) && a < b);
    });
    for (int32_t i = 0; i < n; ++i) top->emplace_back(ids[i], key(ids[i]) - log_z);
  }
  return key(chosen) - log_z;
}

}  // namespace edge
