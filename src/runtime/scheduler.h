// The token-budget scheduler. There are no separate prefill and decode phases: every step
// it gives each running sequence the tokens it still has to compute (a decode token, or
// the next chunk of its prompt) within max_batched_tokens, then admits waiting sequences
// in arrival order while the budget, max_seqs and free KV blocks allow. When KV blocks run
// out for a running sequence, the most recently arrived running sequence is preempted:
// its blocks are freed and it goes back to the front of the queue, to be recomputed.
//
// Decode first: sequences generating (one token each) are planned before any prompt
// chunk, and while any of them runs a step's prompt tokens are capped (set_prefill_cap,
// from the engine's measured step costs and its inter-token latency target) so that a
// new prompt does not stretch the running streams' inter-token gaps. With nothing
// decoding, prompts get the whole budget.
//
// The scheduler's only contract with the executor is the StepPlan: which sequences run
// how many tokens from which position this step.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "model/forward.h"
#include "runtime/kv_cache.h"

namespace edge {

struct SchedSeq {
  enum class State : uint8_t { kWaiting, kRunning, kFinished };
  uint64_t id = 0;
  std::vector<int32_t> tokens;  // prompt + generated so far (media positions: negative keys)
  int64_t n_prompt = 0;
  // Media rows spliced into the prompt (pointing into the request's media): a chunk never
  // ends inside a bidirectional span.
  std::vector<EmbeddingSplice> splices;
  int64_t n_computed = 0;     // positions whose K/V are in the cache
  int64_t cached_prompt = 0;  // positions taken from the prefix cache at admission
  int64_t window_miss = 0;    // positions the global prefix cache had but the sliding
                              // window before them was gone (recomputed), at admission
  SeqKv kv;
  State state = State::kWaiting;
  bool paused = false;  // its consumer is behind: keep the KV, do not schedule
  bool reuse_prefix =
      true;  // may start from the prefix cache (not embeddings that pool every position)
  bool admitted_once = false;
  // Speculative decoding (runtime/speculative.h): tokens proposed to follow the last one,
  // verified in the sequence's next decode step (planned as 1 + draft.size() positions when
  // the budget and free blocks allow; drafts never preempt anyone). After that step the
  // executor appends the drafts the model took to `tokens` and sets draft_accepted, so that
  // complete() keeps their K/V: the rejected drafts' positions are written over later.
  std::vector<int32_t> draft;
  int64_t draft_accepted = 0;

  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
};

struct PlannedSeq {
  SchedSeq* seq = nullptr;
  int64_t pos0 = 0;
  int64_t n_tokens = 0;
  bool wants_logits = false;  // the step reaches the sequence's last token
  int64_t n_draft = 0;        // of n_tokens, drafts after the last token (SchedSeq::draft)
};

struct StepPlan {
  std::vector<PlannedSeq> seqs;
  int64_t n_tokens = 0;
  std::vector<SchedSeq*> preempted;  // sent back to the queue this step
  bool empty() const { return seqs.empty(); }
};

struct SchedulerConfig {
  int32_t max_seqs = 8;
  int64_t max_batched_tokens = 512;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvCache* kv) : config_(config), kv_(kv) {}

  void add(SchedSeq* s);     // joins the back of the queue
  void remove(SchedSeq* s);  // finished or cancelled: frees its KV at once
  StepPlan schedule();
  // Prompt tokens a step may carry while sequences are decoding (0: no cap).
  void set_prefill_cap(int64_t tokens) { prefill_cap_ = tokens; }
  int64_t prefill_cap() const { return prefill_cap_; }
  // After the executor ran the plan: advances n_computed (by the step's positions, those of
  // rejected drafts excepted), commits the KV (prefix hashes, sliding ring).
  void complete(const StepPlan& plan);

  size_t n_running() const { return running_.size(); }
  size_t n_waiting() const { return waiting_.size(); }
  uint64_t preemptions() const { return preemptions_; }

 private:
  bool reserve_or_preempt(SchedSeq* s, int64_t n_pos, const StepPlan& plan, StepPlan* out);
  // Plans running sequences: decoding ones (prefill = false) or those with prompt left.
  void plan_running(bool prefill, int64_t& budget, int64_t& prefill_budget, StepPlan& plan);
  void preempt(SchedSeq* victim);

  SchedulerConfig config_;
  KvCache* kv_;
  std::vector<SchedSeq*> running_;  // admission order
  std::deque<SchedSeq*> waiting_;
  uint64_t preemptions_ = 0;
  int64_t prefill_cap_ = 0;
};

}  // namespace edge
