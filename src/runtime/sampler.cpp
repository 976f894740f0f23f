#include "runtime/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace edge {

Status SamplingParams::validate() const {
  if (!(temperature >= 0.f) || !std::isfinite(temperature))
    return Status::invalid_argument(fmt::format("temperature must be >= 0 (got {})", temperature));
  if (!(top_p > 0.f))  // values >= 1 mean "off"
    return Status::invalid_argument(fmt::format("top_p must be > 0 (got {})", top_p));
  if (!(min_p >= 0.f && min_p <= 1.f))
    return Status::invalid_argument(fmt::format("min_p must be in [0, 1] (got {})", min_p));
  if (!(repeat_penalty > 0.f))
    return Status::invalid_argument(fmt::format("repeat_penalty must be > 0 (got {})", repeat_penalty));
  if (!std::isfinite(presence_penalty) || !std::isfinite(frequency_penalty))
    return Status::invalid_argument("presence/frequency penalties must be finite");
  return {};
}

int32_t argmax(std::span<const float> v) {
  int32_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = static_cast<int32_t>(i);
  return best;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

void Sampler::apply_penalties(std::vector<Candidate>& cands, std::span<const int32_t> history) const {
  const SamplingParams& p = params_;
  if (p.repeat_penalty == 1.f && p.presence_penalty == 0.f && p.frequency_penalty == 0.f) return;
  size_t window = p.repeat_last_n < 0 ? history.size()
                                      : std::min(history.size(), static_cast<size_t>(p.repeat_last_n));
  std::unordered_map<int32_t, int> counts;
  for (size_t i = history.size() - window; i < history.size(); ++i) ++counts[history[i]];
  for (const auto& [id, n] : counts) {
    if (id < 0 || static_cast<size_t>(id) >= cands.size()) continue;
    float& l = cands[id].logit;  // cands is still indexed by id here
    l = l > 0.f ? l / p.repeat_penalty : l * p.repeat_penalty;
    l -= p.presence_penalty + p.frequency_penalty * static_cast<float>(n);
  }
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history) {
  const SamplingParams& p = params_;
  cands_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cands_[i] = {static_cast<int32_t>(i), logits[i], 0.f};
  apply_penalties(cands_, history);
  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (p.temperature <= 0.f)
    return std::min_element(cands_.begin(), cands_.end(), by_logit)->id;

  size_t n = cands_.size();
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) {
    std::partial_sort(cands_.begin(), cands_.begin() + p.top_k, cands_.end(), by_logit);
    n = static_cast<size_t>(p.top_k);
  } else {
    std::sort(cands_.begin(), cands_.end(), by_logit);
  }
  // Softmax over the kept candidates at this temperature (sorted, so [0] is the max).
  const float max_l = cands_[0].logit;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cands_[i].p = std::exp((cands_[i].logit - max_l) / p.temperature);
    sum += cands_[i].p;
  }
  for (size_t i = 0; i < n; ++i) cands_[i].p = static_cast<float>(cands_[i].p / sum);
  if (p.top_p < 1.f) {
    double cum = 0.0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cum += cands_[i].p;
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  if (p.min_p > 0.f) {
    const float floor_p = cands_[0].p * p.min_p;
    size_t keep = 1;
    while (keep < n && cands_[keep].p >= floor_p) ++keep;
    n = keep;
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += cands_[i].p;
  std::uniform_real_distribution<double> uni(0.0, total);
  double r = uni(rng_);
  for (size_t i = 0; i < n; ++i) {
    r -= cands_[i].p;
    if (r <= 0.0) return cands_[i].id;
  }
  return cands_[n - 1].id;
}

}  // namespace edge
