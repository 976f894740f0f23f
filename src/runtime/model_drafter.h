// Drafts from a small model that shares the target's tokenizer (`--draft MODEL`): the draft
// model decodes greedily from the same history, and the target verifies its guesses in one
// batched step (speculative.h). The draft model keeps its own KV cache for the sequence; each
// call catches it up with the tokens the target accepted since the last call (a rejected
// draft's positions are dropped by moving the draft cache's end back) and runs one forward per
// drafted token. Its measured cost per drafted token goes into the draft length the controller
// asks for, so a draft model too slow or too wrong for this CPU is switched off by measurement.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "model/forward.h"
#include "model/model.h"
#include "runtime/speculative.h"

namespace edge {

// OK when `draft` can draft for `target`: both have a tokenizer whose tokens agree id by id
// over the smaller vocabulary (padding rows past it may differ by up to 128), or, without
// tokenizers, the same vocabulary size. The error names the first token that differs.
Status check_draft_model(const Model& target, const Model& draft);

class ModelDrafter final : public Drafter {
 public:
  // n_ctx: positions the sequence may reach (the target's context). The draft cache is
  // allocated on the first draft() (a request that never decodes costs nothing).
  ModelDrafter(const Model& draft, const Model& target, int64_t n_ctx, KvTypes kv_types);
  std::vector<int32_t> draft(std::span<const int32_t> history, int32_t max_tokens) override;
  // Measured; before that, a plain step's cost scaled by the draft's share of the weight
  // bytes (decode reads every weight once per token on both).
  double ms_per_token(double plain_step_ms) const override;
  // Bytes the draft cache holds (0 before the first draft), and the positions in it.
  size_t cache_bytes() const { return state_ ? state_->kv_cache_bytes() : 0; }
  int64_t cache_positions() const { return state_ ? state_->n_past() : 0; }

  // Longest forward a draft model runs (catching up after a long plain stretch or the prompt
  // goes in chunks of this size): small, since every decoding sequence keeps such a scratch.
  static constexpr int64_t kMaxStep = 32;
  // After a plain stretch, the history tokens the draft model catches up with at most.
  static constexpr int64_t kGapTail = 16;

 private:
  // Brings the draft cache to hold history[0, n - 1) and runs history's last token: the
  // logits of the next position. Null on failure (the draft is then empty).
  const float* catch_up(std::span<const int32_t> history);

  const Model* model_;
  int64_t n_ctx_;
  KvTypes kv_types_;
  int32_t n_target_vocab_;
  double weight_ratio_;  // the draft's weight bytes over the target's
  std::unique_ptr<InferenceState> state_;
  // The tokens whose K/V the draft cache holds, in cache order, and the history position of
  // each (increasing; a drafted token's is where it would stand if taken). Positions skipped
  // after a plain stretch leave a hole.
  std::vector<int32_t> cached_;
  std::vector<int64_t> cached_at_;
  StepCostTable costs_;  // ms per drafted token, at count 1 (the median of the last 8)
};

}  // namespace edge
