#include "runtime/scheduler.h"

#include <algorithm>

#include "core/check.h"

namespace edge {

void Scheduler::add(SchedSeq* s) {
  s->state = SchedSeq::State::kWaiting;
  waiting_.push_back(s);
}

void Scheduler::remove(SchedSeq* s) {
  running_.erase(std::remove(running_.begin(), running_.end(), s), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), s), waiting_.end());
  kv_->release(s->kv);
  s->state = SchedSeq::State::kFinished;
}

void Scheduler::preempt(SchedSeq* victim) {
  running_.erase(std::remove(running_.begin(), running_.end(), victim), running_.end());
  kv_->release(victim->kv);
  victim->n_computed = 0;
  victim->draft.clear();
  victim->state = SchedSeq::State::kWaiting;
  waiting_.push_front(victim);
  ++preemptions_;
}

// Reserves KV for s, preempting the latest admitted running sequences that are not part of
// this step's plan yet. False if even that cannot free enough.
bool Scheduler::reserve_or_preempt(SchedSeq* s, int64_t n_pos, const StepPlan& plan,
                                   StepPlan* out) {
  while (!kv_->reserve(s->kv, n_pos)) {
    SchedSeq* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
      const bool planned = std::any_of(plan.seqs.begin(), plan.seqs.end(),
                                       [&](const PlannedSeq& p) { return p.seq == *it; });
      if (*it != s && !planned) {
        victim = *it;
        break;
      }
    }
    if (victim == nullptr) return false;
    preempt(victim);
    out->preempted.push_back(victim);
  }
  return true;
}

void Scheduler::plan_running(bool prefill, int64_t& budget, int64_t& prefill_budget,
                             StepPlan& plan) {
  // Oldest first (a copy: preemption edits running_).
  const std::vector<SchedSeq*> running = running_;
  for (SchedSeq* s : running) {
    if (budget == 0 || (prefill && prefill_budget == 0)) break;
    if (s->state != SchedSeq::State::kRunning || s->paused || s->pending() <= 0) continue;
    if ((s->pending() > 1) != prefill) continue;
    int64_t n = std::min({s->pending(), budget, prefill ? prefill_budget : int64_t{1}});
    if (prefill) n = kv_->clip_to_checkpoint(s->n_computed, n, s->n_prompt);
    // A bidirectional span goes in one step (it may take more than the prompt cap).
    n = splice_chunk_tokens(s->splices, s->n_computed, n);
    if (n > budget || n <= 0) continue;
    if (!reserve_or_preempt(s, s->n_computed + n, plan, &plan)) {
      preempt(s);  // nothing else to take from: wait until others finish
      plan.preempted.push_back(s);
      continue;
    }
    // Drafts ride along where the budget and the free blocks allow (never preempting).
    int64_t n_draft = 0;
    if (!prefill && !s->draft.empty()) {
      n_draft = std::min<int64_t>(static_cast<int64_t>(s->draft.size()), budget - n);
      while (n_draft > 0 && !kv_->reserve(s->kv, s->n_computed + n + n_draft)) --n_draft;
    }
    plan.seqs.push_back({s, s->n_computed, n + n_draft,
                         s->n_computed + n == static_cast<int64_t>(s->tokens.size()), n_draft});
    n += n_draft;
    budget -= n;
    if (prefill) prefill_budget = std::max<int64_t>(0, prefill_budget - n);
  }
}

StepPlan Scheduler::schedule() {
  StepPlan plan;
  int64_t budget = config_.max_batched_tokens;
  int64_t prefill_budget = budget;
  plan_running(/*prefill=*/false, budget, prefill_budget, plan);  // decoding: one token each
  if (!plan.seqs.empty() && prefill_cap_ > 0) prefill_budget = std::min(budget, prefill_cap_);
  plan_running(/*prefill=*/true, budget, prefill_budget, plan);  // prompts being computed
  // Then the queue, in order, while there is room.
  while (budget > 0 && prefill_budget > 0 && !waiting_.empty() &&
         static_cast<int32_t>(running_.size()) < config_.max_seqs) {
    SchedSeq* s = waiting_.front();
    if (s->kv.blocks[0].empty() && s->kv.blocks[1].empty() && s->reuse_prefix) {
      s->n_computed = kv_->attach_prefix(s->kv, s->tokens);
      if (!s->admitted_once) s->cached_prompt = s->n_computed, s->window_miss = s->kv.window_miss;
    }
    int64_t n = std::min({s->pending(), budget, prefill_budget});
    if (n > 1) n = kv_->clip_to_checkpoint(s->n_computed, n, s->n_prompt);
    if (n > 0) n = splice_chunk_tokens(s->splices, s->n_computed, n);
    if (n <= 0 || n > budget || !kv_->reserve(s->kv, s->n_computed + n)) {
      // FIFO: nobody jumps the queue. A waiting sequence holds no blocks: what it attached
      // stays cached for the next try, and the running sequences keep the whole pool (a
      // sliding pool sized for max_seqs rings has no room for a waiting sequence's window).
      kv_->release(s->kv);
      s->n_computed = 0;
      break;
    }
    waiting_.pop_front();
    s->state = SchedSeq::State::kRunning;
    s->admitted_once = true;
    running_.push_back(s);
    plan.seqs.push_back(
        {s, s->n_computed, n, s->n_computed + n == static_cast<int64_t>(s->tokens.size())});
    budget -= n;
    prefill_budget = std::max<int64_t>(0, prefill_budget - n);
  }
  for (const PlannedSeq& p : plan.seqs) plan.n_tokens += p.n_tokens;
  return plan;
}

void Scheduler::complete(const StepPlan& plan) {
  for (const PlannedSeq& p : plan.seqs) {
    SchedSeq* s = p.seq;
    if (s->state != SchedSeq::State::kRunning) continue;
    CHECK(s->n_computed == p.pos0);
    CHECK(s->draft_accepted >= 0 && s->draft_accepted <= p.n_draft);
    s->n_computed += p.n_tokens - p.n_draft + s->draft_accepted;
    s->draft_accepted = 0;
    kv_->commit(s->kv, s->tokens, s->n_computed, s->n_prompt);
  }
}

}  // namespace edge
