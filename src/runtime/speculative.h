// Speculative decoding for one sequence: a drafter proposes the next few tokens, one forward
// pass over [last token, drafts] verifies them, and every draft the model agrees with is a
// token gained for the price of that one pass over the weights.
//
// What is here: the prompt-lookup (n-gram) drafter, the adaptive draft length that turns
// speculation off for a sequence where it does not pay (estimated acceptance against the
// measured cost of verify steps of each length), and verification on an InferenceState by
// the rejection rule (Sampler::verify): each verified position is judged from the model's own
// logits with the history it would have had, so greedy decoding (with any penalties) gives
// exactly plain decoding's tokens and sampling gives plain sampling's distribution.
// Rejected drafts' KV is dropped by moving the sequence's end back (InferenceState::truncate:
// nothing is copied); recurrent (linear-attention) layers go back to the state a verify step
// kept after each of its tokens (InferenceState::keep_step_states). The engine's scheduler runs
// the same controller per sequence (runtime/engine_loop.cpp; attention-only models there).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/forward.h"
#include "runtime/sampler.h"

namespace edge {

// Proposes up to `max_tokens` tokens that may follow `history` (prompt and generated so far).
class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) = 0;
  // Milliseconds per drafted token (a draft model's forwards; 0 for a lookup), given what a
  // plain decode step of the target costs (a drafter may estimate from it before it has
  // measured itself).
  virtual double ms_per_token(double /*plain_step_ms*/) const { return 0.0; }
};

// Prompt lookup: the longest suffix of the history (max_n tokens down to min_n) that occurred
// before; the tokens that followed its most recent earlier occurrence are the draft. No model
// runs: strong where the output copies its context (code edits, RAG answers, JSON, tool calls,
// repeated screen text).
class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(int32_t min_n = 2, int32_t max_n = 4) : min_n_(min_n), max_n_(max_n) {}
  std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) override;

 private:
  int32_t min_n_, max_n_;
};

// Measured cost of a forward step by the number of tokens in it (1: a plain decode step;
// 1 + k: verifying k drafts). Per count, the median of its last 8 measurements: a step
// slowed by another process (steal on a shared host) moves no estimate, where a moving
// average let one slow plain step make verify steps look free. A count never measured is
// interpolated between its measured neighbours, or extrapolated past the largest with the
// slope of the two largest (with one point, an optimistic prior of 10% of a decode step per
// extra token, so a longer draft gets tried and measured).
class StepCostTable {
 public:
  static constexpr int32_t kMaxTokens = 64;
  void record(int32_t n_tokens, double ms);
  double ms(int32_t n_tokens) const;  // 0 while nothing is measured
  bool measured(int32_t n_tokens) const;

 private:
  static constexpr int kWindow = 8;
  double ms_[kMaxTokens + 1] = {};  // the medians
  double recent_[kMaxTokens + 1][kWindow] = {};
  int64_t seen_[kMaxTokens + 1] = {};
};

// The draft length of one sequence, from what speculation has earned on it. The per-token
// acceptance alpha (the chance a draft is taken once the drafts before it were) is
// estimated from recent verify steps (decayed counts, Jeffreys' prior); k drafts then give
// (1 - alpha^(k+1)) / (1 - alpha) tokens for a step of measured cost ms(1 + k), against 1
// token for ms(1). The controller asks for the k with the most tokens per millisecond; when
// that is k = 0 the sequence decodes plainly for `cooldown` steps and then probes with one
// draft; a refused probe doubles the time off (up to 8 cooldowns).
class DraftController {
 public:
  explicit DraftController(int32_t max_draft, int32_t cooldown = 16)
      : max_draft_(max_draft), cooldown_(cooldown) {}
  // Drafts to ask for this step (0: decode plainly). `others`: positions other sequences
  // put in the same step (a batch), each counted as one token: the step's tokens per
  // millisecond are weighed, (others + expected) / (ms(others + 1 + k) + k * draft_ms),
  // draft_ms: the drafter's own cost per drafted token (Drafter::ms_per_token).
  int32_t next_length(const StepCostTable& costs, int32_t others = 0, double draft_ms = 0.0);
  void on_verify(int32_t drafted, int32_t accepted);
  double alpha() const;  // the acceptance estimate (0.5 before any verify step)
  int32_t max_draft() const { return max_draft_; }
  bool off() const { return off_steps_ > 0; }

 private:
  void go_off(int32_t steps);
  // The k with the most tokens per millisecond at acceptance a (0: plain decoding).
  int32_t best_length(const StepCostTable& costs, int32_t others, double draft_ms, double a) const;

  int32_t max_draft_, cooldown_;
  int32_t off_steps_ = 0;           // plain steps left before the next probe
  int32_t backoff_ = 0;             // the length of the last time off
  bool probe_ = false;              // the next drafted step is a probe after a cooldown
  bool probing_ = false;            // the verify step under way is a probe
  double taken_ = 0, refused_ = 0;  // decayed counts of accepted and rejected drafts
};

// Expected tokens of a verify step of k drafts at per-token acceptance alpha (the accepted
// drafts and the one token every step yields).
double expected_tokens(double alpha, int32_t k);

struct SpeculativeStats {
  int64_t verify_steps = 0, plain_steps = 0;
  int64_t drafted = 0, accepted = 0;
  int64_t tokens = 0;  // tokens produced by the steps (accepted drafts + one per step)
  double verify_ms = 0, plain_ms = 0;  // time in verify steps and in plain steps
  // A verify step's cost in plain decode steps (0 until both were timed).
  double verify_cost() const {
    return verify_steps && plain_steps ? (verify_ms / verify_steps) / (plain_ms / plain_steps)
                                       : 0.0;
  }
  double acceptance() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Tokens per pass over the weights (1 without speculation).
  double tokens_per_pass() const {
    const int64_t passes = verify_steps + plain_steps;
    return passes ? double(tokens) / double(passes) : 0.0;
  }
  double mean_accepted() const {
    return verify_steps ? double(accepted) / double(verify_steps) : 0.0;
  }
};

// Decodes from `logits` (the last prompt position's, [n_vocab]) with `history` (the prompt)
// until on_token returns false or n_predict tokens: each step samples the next token, and
// while the controller asks for drafts, verifies them in one forward (Sampler::verify: the
// rejection rule). Greedy gives exactly plain decoding's tokens; sampling gives tokens
// distributed as plain sampling's. on_token sees every token in order. `costs` learns the
// step costs (shared by the sequences of one machine).
Status decode_speculative(InferenceState& state, std::span<const float> logits,
                          std::vector<int32_t> history, int32_t n_predict, Sampler& sampler,
                          Drafter& drafter, DraftController& control, StepCostTable& costs,
                          const std::function<bool(int32_t)>& on_token, SpeculativeStats* stats);

}  // namespace edge
