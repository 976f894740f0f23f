// Speculative decoding for one sequence (issue 39, first part): a drafter proposes the next
// few tokens, one forward pass over [last token, drafts] verifies them, and every draft the
// model agrees with is a token gained for the price of that one pass over the weights.
//
// What is here: the prompt-lookup (n-gram) drafter, the adaptive draft length that turns
// speculation off for a sequence where it does not pay (measured acceptance and measured step
// costs), and deterministic-sampling verification on an InferenceState: greedy decoding with
// any repetition penalties gives exactly the tokens plain decoding gives, because each
// verified position is sampled from the model's own logits with the history it would have had.
// Rejected drafts' KV is dropped by moving the sequence's end back (InferenceState::truncate:
// nothing is copied). Models whose state cannot move back (recurrent layers) and random
// sampling decode without speculation (the caller asks speculation_supported()).
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

// The draft length of one sequence, from what speculation has earned on it. A step that
// verifies k drafts costs verify_ms; a plain decode step plain_ms (both moving averages of
// measured steps). Expected tokens per verify step are 1 + the mean accepted; speculation pays
// while that, divided by verify_ms / plain_ms, stays above 1. When it does not, the sequence
// decodes plainly for `cooldown` steps and then probes again with one draft.
class DraftController {
 public:
  explicit DraftController(int32_t max_draft, int32_t cooldown = 16)
      : max_draft_(max_draft), cooldown_(cooldown), k_(max_draft) {}
  // Drafts to ask for this step (0: decode plainly).
  int32_t next_length();
  void on_verify(int32_t drafted, int32_t accepted, double ms);
  void on_plain(double ms);
  double plain_ms() const { return plain_ms_; }
  double verify_ms() const { return verify_ms_; }

 private:
  int32_t max_draft_, cooldown_;
  int32_t k_;
  int32_t off_steps_ = 0;           // plain steps left before the next probe
  double accepted_mean_ = -1;       // moving average of accepted per verify step (-1: none yet)
  double plain_ms_ = 0, verify_ms_ = 0;
};

struct SpeculativeStats {
  int64_t verify_steps = 0, plain_steps = 0;
  int64_t drafted = 0, accepted = 0;
  int64_t tokens = 0;  // tokens produced by the steps (accepted drafts + one per step)
  double acceptance() const { return drafted ? double(accepted) / double(drafted) : 0.0; }
  // Tokens per pass over the weights (1 without speculation).
  double tokens_per_pass() const {
    const int64_t passes = verify_steps + plain_steps;
    return passes ? double(tokens) / double(passes) : 0.0;
  }
  double mean_accepted() const { return verify_steps ? double(accepted) / double(verify_steps) : 0.0; }
};

// Whether decoding with these sampling parameters on this state can be speculative: the
// sampling is deterministic (greedy) and the state can move its end back.
bool speculation_supported(const SamplingParams& p, const InferenceState& state);

// Decodes from `logits` (the last prompt position's, [n_vocab]) with `history` (the prompt)
// until on_token returns false or n_predict tokens: each step samples the next token, and
// while the controller asks for drafts, verifies them in one forward. on_token sees every
// token in order, as plain decoding would give them. CHECKs speculation_supported().
Status decode_speculative(InferenceState& state, std::span<const float> logits,
                          std::vector<int32_t> history, int32_t n_predict, Sampler& sampler,
                          Drafter& drafter, DraftController& control,
                          const std::function<bool(int32_t)>& on_token, SpeculativeStats* stats);

}  // namespace edge
