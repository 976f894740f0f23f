#include "runtime/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

// Keeps only the allowed ids (in the order given; duplicates and ids outside the
// vocabulary dropped). Called after the penalties, which index cands_ by id.
void Sampler::restrict_to(std::span<const int32_t> allowed) {
  std::vector<Candidate> kept;
  kept.reserve(allowed.size());
  std::vector<bool> seen(cands_.size(), false);
  for (int32_t id : allowed) {
    if (id < 0 || static_cast<size_t>(id) >= cands_.size() || seen[id]) continue;
    seen[id] = true;
    kept.push_back(cands_[id]);
  }
  if (!kept.empty()) cands_.swap(kept);
}

float finite_logit(float v) {
  if (std::isnan(v)) return -std::numeric_limits<float>::max();
  return std::clamp(v, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max());
}

namespace {

// Strict weak order on finite logits: larger first, lower id on ties.
bool by_logit(const Sampler::Candidate& a, const Sampler::Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Number of leading (sorted) candidates of [0, n) that top-p then min-p keep, or 0 when the
// cut lies beyond the first `sorted` (more of the order is needed to decide).
size_t tail_cut(const std::vector<Sampler::Candidate>& c, size_t n, size_t sorted, float top_p,
                float min_p) {
  size_t keep = n;
  if (top_p < 1.f) {
    double cum = 0.0;
    size_t i = 0;
    for (; i < sorted; ++i) {
      cum += c[i].p;
      if (cum >= top_p) break;
    }
    if (i == sorted && sorted < n) return 0;
    keep = std::min(keep, i + 1);
  }
  if (min_p > 0.f) {
    const float floor_p = c[0].p * min_p;
    size_t i = 1;
    while (i < keep && i < sorted && c[i].p >= floor_p) ++i;
    if (i == sorted && sorted < keep) return 0;
    keep = i;
  }
  return keep;
}

}  // namespace

// Cost is O(vocab) plus the sort of the head the cuts keep (partial selection, widened
// until the cut lies inside it): a 150k vocabulary is never sorted whole. Logits are made
// finite first (NaN -> lowest, +-inf clamped) so every comparison is a strict weak order.
size_t Sampler::distribution(std::span<const float> logits, std::span<const int32_t> history,
                             std::span<const int32_t> allowed) {
  const SamplingParams& p = params_;
  cands_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cands_[i] = {static_cast<int32_t>(i), logits[i], 0.f};
  apply_penalties(cands_, history);
  if (!allowed.empty()) restrict_to(allowed);
  for (Candidate& c : cands_) c.logit = finite_logit(c.logit);
  if (p.temperature <= 0.f) {  // one candidate, certain: the greedy choice
    const Candidate best = *std::min_element(cands_.begin(), cands_.end(), by_logit);
    cands_[0] = {best.id, best.logit, 1.f};
    return 1;
  }

  size_t n = cands_.size();
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < n) {
    n = static_cast<size_t>(p.top_k);  // [0, n) becomes the top-k set, unordered
    std::nth_element(cands_.begin(), cands_.begin() + (n - 1), cands_.end(), by_logit);
  }
  // Softmax over the kept set at this temperature.
  float max_l = cands_[0].logit;
  for (size_t i = 1; i < n; ++i) max_l = std::max(max_l, cands_[i].logit);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cands_[i].p = static_cast<float>(std::exp((double{cands_[i].logit} - max_l) / p.temperature));
    sum += cands_[i].p;
  }
  for (size_t i = 0; i < n; ++i) cands_[i].p = static_cast<float>(cands_[i].p / sum);
  if (p.top_p < 1.f || p.min_p > 0.f) {
    for (size_t head = std::min<size_t>(n, 64);; head = std::min(n, head * 4)) {
      std::partial_sort(cands_.begin(), cands_.begin() + head, cands_.begin() + n, by_logit);
      if (const size_t keep = tail_cut(cands_, n, head, p.top_p, p.min_p)) {
        n = keep;
        break;
      }
    }
  }
  return n;
}

int32_t Sampler::draw(size_t n) {
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += cands_[i].p;
  std::uniform_real_distribution<double> uni(0.0, total);
  double r = uni(rng_);
  for (size_t i = 0; i < n; ++i) {
    r -= cands_[i].p;
    if (r <= 0.0 && cands_[i].p > 0.f) return cands_[i].id;
  }
  for (size_t i = n; i-- > 0;)  // rounding left r above 0: the last candidate with mass
    if (cands_[i].p > 0.f) return cands_[i].id;
  return cands_[0].id;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> history,
                        std::span<const int32_t> allowed) {
  const size_t n = distribution(logits, history, allowed);
  return params_.temperature <= 0.f ? cands_[0].id : draw(n);
}

// The rejection rule for a draft that was proposed with certainty (q(draft) = 1): accept it
// with probability p(draft); otherwise draw from p with the draft removed, renormalised
// (max(0, p - q) normalised is exactly that). The token that comes out is distributed as p,
// whatever the drafter proposed. Greedy: p is one-hot on the argmax.
int32_t Sampler::verify(std::span<const float> logits, std::span<const int32_t> history, int32_t draft,
                        std::span<const int32_t> allowed) {
  const size_t n = distribution(logits, history, allowed);
  if (params_.temperature <= 0.f) return cands_[0].id;
  double total = 0.0, p_draft = 0.0;
  size_t at = n;
  for (size_t i = 0; i < n; ++i) {
    total += cands_[i].p;
    if (cands_[i].id == draft) p_draft = cands_[i].p, at = i;
  }
  if (at == n) return draw(n);  // the draft has no probability: never accepted
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  if (uni(rng_) * total < p_draft) return draft;
  cands_[at].p = 0.f;
  return draw(n);
}

}  // namespace edge
