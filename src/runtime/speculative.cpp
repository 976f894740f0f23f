// Prompt-lookup drafting, the adaptive draft length and verification (speculative.h).
#include "runtime/speculative.h"

#include <algorithm>
#include <chrono>

#include "core/check.h"

namespace edge {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Moving average with a short memory: costs and acceptance drift with the text.
void average(double& avg, double v, double w = 0.2) { avg = avg <= 0 ? v : avg + w * (v - avg); }

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
        out.push_back(src < len ? history[static_cast<size_t>(src)] : out[static_cast<size_t>(src - len)]);
      return out;
    }
  }
  return {};
}

int32_t DraftController::next_length() {
  if (off_steps_ > 0) {
    --off_steps_;
    return 0;
  }
  return k_;
}

void DraftController::on_plain(double ms) { average(plain_ms_, ms); }

void DraftController::on_verify(int32_t drafted, int32_t accepted, double ms) {
  average(verify_ms_, ms);
  if (accepted_mean_ < 0) accepted_mean_ = accepted;
  average(accepted_mean_, accepted, 0.3);
  // Grow the draft while every draft is taken; shrink it towards what is taken.
  if (accepted == drafted) {
    k_ = std::min(max_draft_, k_ + 1);
  } else {
    k_ = std::max(1, std::min(k_, accepted + 1));
  }
  // Worth it while (1 + mean accepted) tokens per verify beat a plain step per token. Until a
  // plain step has been timed, acceptance alone decides (nothing accepted: not worth it).
  const double cost = plain_ms_ > 0 ? verify_ms_ / plain_ms_ : 1.0;
  if ((1.0 + accepted_mean_) / std::max(cost, 1e-9) < 1.0 || (plain_ms_ <= 0 && accepted_mean_ < 0.05)) {
    off_steps_ = cooldown_;
    k_ = 1;               // the probe after the cooldown drafts one token
    accepted_mean_ = -1;  // and is judged afresh
  }
}

bool speculation_supported(const SamplingParams& p, const InferenceState& state) {
  return p.temperature <= 0.f && !state.kv_layout().has_state();
}

Status decode_speculative(InferenceState& state, std::span<const float> logits,
                          std::vector<int32_t> history, int32_t n_predict, Sampler& sampler,
                          Drafter& drafter, DraftController& control,
                          const std::function<bool(int32_t)>& on_token, SpeculativeStats* stats) {
  SpeculativeStats local;
  SpeculativeStats& st = stats ? *stats : local;
  std::vector<float> row(logits.begin(), logits.end());  // the next position's logits
  const int64_t n_vocab = static_cast<int64_t>(row.size());
  int32_t produced = 0;
  for (;;) {
    const int32_t id = sampler.sample(row, history);
    history.push_back(id);
    ++st.tokens;
    // As plain decoding: stop at the limit, or when the context has no position left.
    if (!on_token(id) || ++produced >= n_predict || state.n_past() >= state.n_ctx())
      return Status();
    const int32_t room = static_cast<int32_t>(
        std::min<int64_t>(int64_t{n_predict - produced}, state.n_ctx() - state.n_past()));
    const int32_t want = std::min(control.next_length(), room - 1);
    std::vector<int32_t> step{id};
    if (want > 0) {
      const std::vector<int32_t> d = drafter.draft(history, want);
      step.insert(step.end(), d.begin(), d.end());
    }
    const int64_t base = state.n_past();
    const auto t = Clock::now();
    auto out = state.forward(step, /*all_logits=*/step.size() > 1);
    if (!out) return out.status();
    const double ms = ms_since(t);
    if (step.size() == 1) {
      ++st.plain_steps;
      control.on_plain(ms);
      row.assign(out->begin(), out->end());
      continue;
    }
    // Row i holds the logits after step[i]; draft step[i + 1] stands while the model, sampled
    // as plain decoding would, picks it there.
    const int32_t drafted = static_cast<int32_t>(step.size()) - 1;
    int32_t accepted = 0;
    for (; accepted < drafted; ++accepted) {
      const std::span<const float> r = out->subspan(static_cast<size_t>(accepted * n_vocab),
                                                    static_cast<size_t>(n_vocab));
      const int32_t next = sampler.sample(r, history);
      if (next != step[static_cast<size_t>(accepted) + 1]) break;
      history.push_back(next);
      ++st.tokens;
      if (!on_token(next) || ++produced >= n_predict) {
        ++st.verify_steps, st.drafted += drafted, st.accepted += accepted + 1;
        return state.truncate(base + accepted + 2);
      }
    }
    ++st.verify_steps;
    st.drafted += drafted;
    st.accepted += accepted;
    control.on_verify(drafted, accepted, ms);
    row.assign(out->begin() + accepted * n_vocab, out->begin() + (accepted + 1) * n_vocab);
    // Keep id and the accepted drafts; the rejected drafts' positions are dropped.
    RETURN_IF_ERROR(state.truncate(base + 1 + accepted));
  }
}

}  // namespace edge
