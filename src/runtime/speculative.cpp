// Prompt-lookup drafting, the adaptive draft length and verification (speculative.h).
#include "runtime/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"

namespace edge {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

std::vector<int32_t> NgramDrafter::draft(std::span<const int32_t> history, int32_t max_tokens) {
  const int64_t len = static_cast<int64_t>(history.size());
  for (int32_t n = std::min<int64_t>(max_n_, len - 1); n >= min_n_; --n) {
    const std::span<const int32_t> tail = history.subspan(static_cast<size_t>(len - n));
    // The most recent earlier occurrence: scan back from the one just before the tail.
    for (int64_t at = len - n - 1; at >= 0; --at) {
      if (!std::equal(tail.begin(), tail.end(), history.begin() + at)) continue;
      // Copy what followed; where that runs into the end of the history, the copy goes on
      // from what it already drafted (a repeating stretch repeats on).
      std::vector<int32_t> out;
      for (int64_t src = at + n; static_cast<int32_t>(out.size()) < max_tokens; ++src)
        out.push_back(src < len ? history[static_cast<size_t>(src)]
                                : out[static_cast<size_t>(src - len)]);
      return out;
    }
  }
  return {};
}

void StepCostTable::record(int32_t n_tokens, double ms) {
  if (n_tokens < 1 || n_tokens > kMaxTokens || !(ms > 0)) return;
  double* recent = recent_[n_tokens];
  recent[seen_[n_tokens]++ % kWindow] = ms;
  const int n = static_cast<int>(std::min<int64_t>(seen_[n_tokens], kWindow));
  double sorted[kWindow];
  std::copy_n(recent, n, sorted);
  std::sort(sorted, sorted + n);
  ms_[n_tokens] = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

bool StepCostTable::measured(int32_t n_tokens) const {
  return n_tokens >= 1 && n_tokens <= kMaxTokens && ms_[n_tokens] > 0;
}

double StepCostTable::ms(int32_t n_tokens) const {
  n_tokens = std::clamp(n_tokens, 1, kMaxTokens);
  if (ms_[n_tokens] > 0) return ms_[n_tokens];
  int32_t lo = n_tokens - 1, hi = n_tokens + 1;
  while (lo >= 1 && ms_[lo] <= 0) --lo;
  while (hi <= kMaxTokens && ms_[hi] <= 0) ++hi;
  if (lo >= 1 && hi <= kMaxTokens)
    return ms_[lo] + (ms_[hi] - ms_[lo]) * (n_tokens - lo) / double(hi - lo);
  if (lo < 1 && hi > kMaxTokens) return 0;
  if (lo < 1) return ms_[hi];  // below every measurement: no cheaper than the smallest
  // Past the largest: the slope of the two largest, or the optimistic prior.
  int32_t below = lo - 1;
  while (below >= 1 && ms_[below] <= 0) --below;
  const double slope =
      below >= 1 ? std::max(0.0, (ms_[lo] - ms_[below]) / (lo - below)) : 0.1 * ms_[lo] / lo;
  return ms_[lo] + slope * (n_tokens - lo);
}

double expected_tokens(double alpha, int32_t k) {
  if (alpha >= 1.0) return k + 1.0;
  return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

// The posterior mean under Jeffreys' prior (half a draft taken, half refused): one refused
// draft alone does not turn speculation off, and with the decayed counts below it can still
// fall under 5% (Laplace's prior of one each stops at 1/12, above the break-even of a cheap
// verify step, so a sequence that never takes a draft kept drafting).
double DraftController::alpha() const {
  return (taken_ + 0.5) / (taken_ + refused_ + 1.0);
}

int32_t DraftController::next_length(const StepCostTable& costs, int32_t others, double draft_ms) {
  if (off_steps_ > 0) {
    --off_steps_;
    return 0;
  }
  const double plain = costs.ms(others + 1);
  if (probe_) {  // after a cooldown: one draft, judged with the evidence so far
    // Unless drafting could not pay even if every draft were taken (a draft model about as
    // slow as the target): then a probe only costs, and the sequence stays off. (A lookup
    // drafter costs nothing to ask; its probe is one cheap verify step, always made.)
    if (draft_ms > 0 && plain > 0 && best_length(costs, others, draft_ms, 1.0) == 0) {
      go_off(backoff_);
      --off_steps_;
      return 0;
    }
    probe_ = false;
    probing_ = true;
    return std::min(1, max_draft_);
  }
  if (plain <= 0) return 0;  // time a step first: every other cost is relative to it
  const int32_t best = best_length(costs, others, draft_ms, alpha());
  if (best == 0) go_off(cooldown_);  // measured not to pay: off for a while
  return best;
}

// Drafting must beat plain decoding by 3%: step costs are measured on a noisy machine, and
// the margin bounds the loss where drafts are never taken but a verify step is nearly free
// (the estimate cannot fall below 0.045 with these counts).
int32_t DraftController::best_length(const StepCostTable& costs, int32_t others, double draft_ms,
                                     double a) const {
  int32_t best = 0;
  double best_rate = 1.03 * (others + 1) / costs.ms(others + 1);
  for (int32_t k = 1; k <= max_draft_; ++k) {
    const double rate =
        (others + expected_tokens(a, k)) / (costs.ms(others + 1 + k) + k * draft_ms);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  return best;
}

void DraftController::go_off(int32_t steps) {
  off_steps_ = steps;
  backoff_ = steps;
  probe_ = true;
}

void DraftController::on_verify(int32_t drafted, int32_t accepted) {
  // Decayed counts: about the last ten verify steps speak (acceptance drifts with the text;
  // a shorter memory made the draft length follow chance runs of refusals).
  constexpr double kKeep = 0.9;
  taken_ = kKeep * taken_ + accepted;
  refused_ = kKeep * refused_ + (accepted < drafted ? 1.0 : 0.0);
  if (!probing_) return;
  probing_ = false;
  // A refused probe: off again at once, each time twice as long (up to 8 cooldowns), so a
  // sequence whose drafts are never taken pays one cheap verify step in ever longer stretches.
  if (accepted == 0) go_off(std::min(2 * backoff_, 8 * cooldown_));
}

namespace {

// Position bookkeeping of decode_speculative: emits a token and says whether decoding goes on.
struct Emitter {
  std::vector<int32_t>& history;
  const std::function<bool(int32_t)>& on_token;
  SpeculativeStats& st;
  int32_t n_predict;
  int32_t produced = 0;
  bool operator()(int32_t id) {
    history.push_back(id);
    ++st.tokens;
    return on_token(id) && ++produced < n_predict;
  }
};

}  // namespace

Status decode_speculative(InferenceState& state, std::span<const float> logits,
                          std::vector<int32_t> history, int32_t n_predict, Sampler& sampler,
                          Drafter& drafter, DraftController& control, StepCostTable& costs,
                          const std::function<bool(int32_t)>& on_token, SpeculativeStats* stats) {
  // Recurrent layers: a verify step keeps the state after each of its tokens.
  RETURN_IF_ERROR(state.keep_step_states(1 + control.max_draft()));
  SpeculativeStats local;
  SpeculativeStats& st = stats ? *stats : local;
  Emitter emit{history, on_token, st, n_predict};
  const int64_t n_vocab = static_cast<int64_t>(logits.size());
  int32_t next = sampler.sample(logits, history);
  for (;;) {
    // As plain decoding: stop at the limit, or when the context has no position left.
    if (!emit(next) || state.n_past() >= state.n_ctx()) return Status();
    const int32_t room = static_cast<int32_t>(
        std::min<int64_t>(int64_t{n_predict - emit.produced}, state.n_ctx() - state.n_past()));
    const int32_t want =
        std::min(control.next_length(costs, 0, drafter.ms_per_token(costs.ms(1))), room - 1);
    std::vector<int32_t> step{next};
    if (want > 0) {
      const std::vector<int32_t> d = drafter.draft(history, want);
      step.insert(step.end(), d.begin(), d.end());
    }
    const int64_t base = state.n_past();
    const auto t = Clock::now();
    auto out = state.forward(step, /*all_logits=*/step.size() > 1);
    if (!out) return out.status();
    const double ms = ms_since(t);
    costs.record(static_cast<int32_t>(step.size()), ms);
    (step.size() == 1 ? st.plain_ms : st.verify_ms) += ms;
    if (step.size() == 1) {
      ++st.plain_steps;
      next = sampler.sample(*out, history);
      continue;
    }
    // Row i holds the logits after step[i]: the draft step[i + 1] stands when the rejection
    // rule takes it there; otherwise the replacement drawn there is the next token.
    const int32_t drafted = static_cast<int32_t>(step.size()) - 1;
    auto row = [&](int32_t i) {
      return out->subspan(static_cast<size_t>(i * n_vocab), static_cast<size_t>(n_vocab));
    };
    int32_t accepted = 0;
    next = -1;
    for (; accepted < drafted; ++accepted) {
      const int32_t draft = step[static_cast<size_t>(accepted) + 1];
      const int32_t got = sampler.verify(row(accepted), history, draft);
      if (got != draft) {
        next = got;
        break;
      }
      if (!emit(draft)) {  // finished inside the draft: keep what was emitted
        ++st.verify_steps, st.drafted += drafted, st.accepted += accepted + 1;
        return state.truncate(base + accepted + 2);
      }
    }
    if (next < 0) next = sampler.sample(row(drafted), history);  // every draft taken
    ++st.verify_steps;
    st.drafted += drafted;
    st.accepted += accepted;
    control.on_verify(drafted, accepted);
    // Keep the step's first token and the accepted drafts; the rejected drafts' positions go.
    RETURN_IF_ERROR(state.truncate(base + 1 + accepted));
  }
}

}  // namespace edge
