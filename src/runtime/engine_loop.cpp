// The engine's background loop: schedule a step, run it without holding the lock, then
// sample, apply stop rules and push chunks to the requests' bounded streams.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "runtime/engine_impl.h"

namespace edge {

void EngineImpl::loop() {
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    if (!run_step(lk)) work_cv_.wait(lk);  // nothing runnable: wait for submit/next/cancel
  }
  // Shutting down: every live request ends with an error chunk.
  for (auto& [id, r] : requests_)
    if (!r->terminal_pushed)
      finish(*r, ChunkKind::kError, "error", Status::unavailable("the engine stopped"));
  stream_cv_.notify_all();
}

void EngineImpl::push_chunk(EngineRequest& r, StreamChunk c) {
  r.queue.push_back(std::move(c));
  stats_.stream_high_water =
      std::max<int32_t>(stats_.stream_high_water, static_cast<int32_t>(r.queue.size()));
  if (static_cast<int32_t>(r.queue.size()) >= options_.stream_queue_limit) r.seq.paused = true;
}

// Ends a request: frees its KV at once and queues the terminal chunk (which may exceed
// the queue bound: it is the last).
void EngineImpl::finish(EngineRequest& r, ChunkKind kind, const std::string& reason, Status error) {
  if (r.terminal_pushed) return;
  StreamChunk c;
  c.kind = kind;
  if (kind == ChunkKind::kDone && r.decoder) {
    bool stopped = false;
    std::string tail = r.stop_filter.push(r.decoder->flush(), &stopped);
    c.text = tail + r.stop_filter.flush();
  }
  c.finish_reason = reason;
  c.error = std::move(error);
  c.prompt_tokens = r.seq.n_prompt;
  c.completion_tokens = r.n_generated;
  c.cached_prompt_tokens = r.seq.cached_prompt;
  c.spec_drafted = r.spec_drafted;
  c.spec_accepted = r.spec_accepted;
  scheduler_.remove(&r.seq);
  r.terminal_pushed = true;
  ++stats_.prefix_cache_queries;
  stats_.prefix_cache_hit_tokens += static_cast<uint64_t>(r.seq.cached_prompt);
  stats_.prefix_cache_hits += r.seq.cached_prompt > 0 ? 1 : 0;
  stats_.prefix_cache_window_miss_tokens += static_cast<uint64_t>(r.seq.window_miss);
  if (kind == ChunkKind::kDone) ++stats_.requests_finished;
  if (kind == ChunkKind::kCancelled) ++stats_.requests_cancelled;
  r.queue.push_back(std::move(c));
}

// Queues one token for r (or ends the request).
void EngineImpl::emit_token(EngineRequest& r, const Sampled& s, int32_t tok, bool in_history) {
  ++r.n_generated;
  ++stats_.generated_tokens;
  const Tokenizer* t = model_->tokenizer();
  const RequestParams& p = r.params;
  const bool eog = !p.ignore_eos && t != nullptr && t->is_eog(tok);
  const bool stop_id = std::find(p.stop_ids.begin(), p.stop_ids.end(), tok) != p.stop_ids.end();
  if (eog || stop_id) {
    finish(r, ChunkKind::kDone, "stop");
    return;
  }
  StreamChunk c;
  c.tokens.push_back(tok);
  if (s.logprob) c.logprobs.push_back(*s.logprob);
  bool stopped = false;
  if (r.decoder) c.text = r.stop_filter.push(r.decoder->push(tok), &stopped);
  if (!in_history) r.seq.tokens.push_back(tok);
  push_chunk(r, std::move(c));
  // (The prompt and what was emitted: accepted drafts may already stand in seq.tokens.)
  if (stopped) {
    finish(r, ChunkKind::kDone, "stop");
  } else if (r.n_generated >= p.max_tokens ||
             r.seq.n_prompt + r.n_generated >= options_.max_model_len) {
    finish(r, ChunkKind::kDone, "length");
  }
}

void EngineImpl::emit_step(EngineRequest& r, const Sampled& s) {
  for (int32_t d : s.drafts_taken) {
    emit_token(r, Sampled{}, d, /*in_history=*/true);
    if (r.terminal_pushed) return;  // finished inside the draft: what follows is dropped
  }
  emit_token(r, s, s.token, /*in_history=*/false);
}

void EngineImpl::prepare_draft(EngineRequest& r, int32_t other_decoding) {
  r.seq.draft.clear();
  if (!r.drafter || r.terminal_pushed || r.cancel_requested || r.seq.pending() != 1) return;
  // No draft past what the request may still emit or its context holds.
  int64_t room =
      std::min<int64_t>(r.params.max_tokens - r.n_generated,
                        options_.max_model_len - static_cast<int64_t>(r.seq.tokens.size()));
  // Recurrent layers with prefix-cache checkpoints: those are saved when a step ends on a
  // block boundary, so a verify step ends there at the latest.
  if (kv_.layout().has_state() && kv_.state_checkpoints().capacity() > 0) {
    const int64_t bt = kv_.layout().settings.block_tokens, next = r.seq.n_computed + 1;
    room = std::min(room, (next + bt - 1) / bt * bt - next + 1);
  }
  const int32_t want = static_cast<int32_t>(
      std::min<int64_t>(r.draft_control.next_length(spec_costs_, other_decoding,
                                                    r.drafter->ms_per_token(spec_costs_.ms(1))),
                        room - 1));
  if (want <= 0) return;
  r.seq.draft = r.drafter->draft(r.seq.tokens, want);
  // Media positions are keyed by negative ids: a draft copied from them stops there.
  const int32_t n_vocab = model_->config().n_vocab;
  const auto bad = std::find_if(r.seq.draft.begin(), r.seq.draft.end(),
                                [&](int32_t t) { return t < 0 || t >= n_vocab; });
  r.seq.draft.erase(bad, r.seq.draft.end());
}

void EngineImpl::pool_rows(EngineRequest& r, const PlannedSeq& ps, int64_t row, int64_t logit_row,
                           std::span<const float> logits) {
  const int64_t d = model_->config().n_embd;
  const std::span<const float> hidden = pass_.hidden();
  auto row_at = [&](int64_t k) {
    return hidden.subspan(static_cast<size_t>(k * d), static_cast<size_t>(d));
  };
  if (ps.pos0 == 0) r.pooled.assign(static_cast<size_t>(d), 0.0);  // (again, after a preemption)
  if (r.pooling == Pooling::kMean) {
    for (int64_t t = 0; t < ps.n_tokens; ++t) {
      const auto x = row_at(row + t);
      for (int64_t j = 0; j < d; ++j) r.pooled[static_cast<size_t>(j)] += x[static_cast<size_t>(j)];
    }
  } else if (r.pooling == Pooling::kCls && ps.pos0 == 0) {
    const auto x = row_at(row);
    r.pooled.assign(x.begin(), x.end());
  } else if (r.pooling == Pooling::kLast && ps.wants_logits) {
    const auto x = row_at(row);
    r.pooled.assign(x.begin(), x.end());
    const size_t n_vocab = static_cast<size_t>(model_->config().n_vocab);
    r.scores.clear();
    for (int32_t id : r.score_ids)
      r.scores.push_back(
          logits[static_cast<size_t>(logit_row) * n_vocab + static_cast<size_t>(id)]);
  }
}

void EngineImpl::finish_embedding(EngineRequest& r) {
  StreamChunk c;
  c.kind = ChunkKind::kDone;
  const double n = r.pooling == Pooling::kMean ? static_cast<double>(r.seq.n_prompt) : 1.0;
  c.embedding.reserve(r.pooled.size());
  for (double v : r.pooled) c.embedding.push_back(static_cast<float>(v / n));
  c.scores = std::move(r.scores);
  c.finish_reason = "embedding";
  c.prompt_tokens = r.seq.n_prompt;
  c.cached_prompt_tokens = r.seq.cached_prompt;
  scheduler_.remove(&r.seq);
  r.terminal_pushed = true;
  ++stats_.requests_finished;
  r.queue.push_back(std::move(c));
}

// Sampling reads only what the loop thread alone writes (the request's sampler, its
// parameters and token history), so it runs without the engine lock: submit, next and
// cancel are not held up by a sort over the vocabulary.
std::vector<EngineImpl::Sampled> EngineImpl::sample_step(const std::vector<EngineRequest*>& reqs,
                                                         const StepPlan& plan,
                                                         const std::vector<bool>& wants_logits,
                                                         std::span<const float> logits) const {
  const size_t n_vocab = static_cast<size_t>(model_->config().n_vocab);
  std::vector<Sampled> out(reqs.size());
  size_t row = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (!wants_logits[i]) continue;
    EngineRequest& r = *reqs[i];
    const int64_t n_draft = plan.seqs[i].n_draft;
    if (n_draft > 0) {  // rows [1 + n_draft]: the last token's, then each draft's
      verify_drafts(r, n_draft,
                    logits.subspan(row * n_vocab, static_cast<size_t>(1 + n_draft) * n_vocab),
                    out[i]);
      row += static_cast<size_t>(1 + n_draft);
      continue;
    }
    const std::span<const float> l = logits.subspan(row++ * n_vocab, n_vocab);
    std::span<const int32_t> allowed;
    if (r.params.guide) {
      const std::span<const int32_t> history(r.seq.tokens);
      allowed = r.params.guide->allowed(history.last(static_cast<size_t>(r.n_generated)));
    }
    out[i].token = r.sampler.sample(l, r.seq.tokens, allowed);
    if (r.params.logprobs >= 0) {
      TokenLogprob lp;
      lp.id = out[i].token;
      lp.logprob = token_logprob(l, lp.id, &lp.top, r.params.logprobs);
      out[i].logprob = std::move(lp);
    }
  }
  return out;
}

// Row j holds the logits after the j-th position of the slice (the last token, then the
// drafts): draft j stands when the rejection rule takes it there, with the history it would
// have had; otherwise the token drawn there is the step's token. Every draft taken: the row
// after the last draft gives one more.
void EngineImpl::verify_drafts(EngineRequest& r, int64_t n_draft, std::span<const float> rows,
                               Sampled& out) const {
  const size_t n_vocab = static_cast<size_t>(model_->config().n_vocab);
  auto row = [&](int64_t j) { return rows.subspan(static_cast<size_t>(j) * n_vocab, n_vocab); };
  std::vector<int32_t> history = r.seq.tokens;
  for (int64_t j = 0; j < n_draft; ++j) {
    const int32_t draft = r.seq.draft[static_cast<size_t>(j)];
    const int32_t got = r.sampler.verify(row(j), history, draft);
    if (got != draft) {
      out.token = got;
      return;
    }
    out.drafts_taken.push_back(draft);
    history.push_back(draft);
  }
  out.token = r.sampler.sample(row(n_draft), history);
}

float* EngineImpl::draft_states_of(int32_t slot) {
  const KvLayout& l = kv_.layout();
  return draft_states_.data() +
         int64_t{slot} * l.n_state_layers * (1 + options_.draft_max) * l.state_floats_per_layer;
}

void EngineImpl::restore_draft_state(const SeqStep& st, int64_t kept) {
  const KvLayout& l = kv_.layout();
  if (!l.has_state() || kept >= st.n_tokens) return;  // every token stands: the state is right
  const int64_t sf = l.state_floats_per_layer;
  for (int layer = 0; layer < model_->config().n_layer; ++layer) {
    if (l.layer_group[static_cast<size_t>(layer)] >= 0) continue;  // an attention layer
    const int64_t slot = l.layer_slot[static_cast<size_t>(layer)];
    std::copy_n(st.state_snapshots + (slot * st.n_tokens + kept - 1) * sf, sf,
                kv_.storage().state(layer, st.state_slot));
  }
}

void EngineImpl::learn_step_cost(const StepPlan& plan, double ms) {
  int64_t decoding = 0, prompt = 0;
  for (const PlannedSeq& p : plan.seqs)
    (p.n_tokens - p.n_draft == 1 ? decoding : prompt) += p.n_tokens;
  if (prompt == 0) spec_costs_.record(static_cast<int32_t>(decoding), ms);
  constexpr double kKeep = 0.8;  // moving averages: recent steps count most
  auto average = [&](double& avg, double x) { avg = avg == 0 ? x : kKeep * avg + (1 - kKeep) * x; };
  if (prompt == 0) {
    average(decode_step_ms_, ms);
  } else if (decoding > 0 && decode_step_ms_ > 0) {
    average(prefill_token_ms_, std::max(0.0, ms - decode_step_ms_) / static_cast<double>(prompt));
  } else {
    average(prefill_token_ms_,
            ms / static_cast<double>(prompt));  // an upper bound: no decode beside
  }
  int64_t cap = 0;  // no cap until both costs are known, or when the target says so
  if (options_.itl_target_ms >= 0 && decode_step_ms_ > 0 && prefill_token_ms_ > 0) {
    const double target = options_.itl_target_ms > 0 ? options_.itl_target_ms : 2 * decode_step_ms_;
    const double room = std::max(0.0, target - decode_step_ms_);
    cap = std::clamp<int64_t>(static_cast<int64_t>(room / prefill_token_ms_), 1,
                              options_.max_batched_tokens);
  }
  scheduler_.set_prefill_cap(cap);
  stats_.decode_step_ms = decode_step_ms_;
  stats_.prefill_token_ms = prefill_token_ms_;
  stats_.prefill_cap = cap;
}

// The drafts a step verified: those taken join their sequences (and recurrent states go
// back past the refused ones); the controllers and the counters learn from them. mu_ held.
void EngineImpl::take_verified_drafts(const StepPlan& plan, const std::vector<SeqStep>& steps,
                                      const std::vector<EngineRequest*>& reqs,
                                      const std::vector<Sampled>& sampled) {
  for (size_t i = 0; i < reqs.size(); ++i) {
    const int64_t n_draft = plan.seqs[i].n_draft;
    if (n_draft == 0) continue;
    EngineRequest& r = *reqs[i];
    const auto& taken = sampled[i].drafts_taken;
    r.seq.tokens.insert(r.seq.tokens.end(), taken.begin(), taken.end());
    r.seq.draft_accepted = static_cast<int64_t>(taken.size());
    restore_draft_state(steps[i], plan.seqs[i].n_tokens - n_draft + r.seq.draft_accepted);
    r.draft_control.on_verify(static_cast<int32_t>(n_draft), static_cast<int32_t>(taken.size()));
    r.spec_drafted += n_draft;
    r.spec_accepted += static_cast<int64_t>(taken.size());
    ++stats_.spec_verify_steps;
    stats_.spec_drafted += static_cast<uint64_t>(n_draft);
    stats_.spec_accepted += static_cast<uint64_t>(taken.size());
  }
}

// The forward pass's inputs for a plan: its tokens (each slice's own, then its drafts), the
// slices, their requests (marked in flight) and which of them sample. mu_ held.
void EngineImpl::stage_step(const StepPlan& plan, std::vector<int32_t>& tokens,
                            std::vector<SeqStep>& steps, std::vector<EngineRequest*>& reqs,
                            std::vector<bool>& wants_logits) {
  tokens.reserve(static_cast<size_t>(plan.n_tokens));
  for (const PlannedSeq& ps : plan.seqs) {
    SchedSeq& s = *ps.seq;
    const int64_t own = ps.n_tokens - ps.n_draft;  // the sequence's tokens, then its drafts
    tokens.insert(tokens.end(), s.tokens.begin() + ps.pos0, s.tokens.begin() + ps.pos0 + own);
    tokens.insert(tokens.end(), s.draft.begin(), s.draft.begin() + ps.n_draft);
    SeqStep st;
    st.pos0 = ps.pos0;
    st.n_tokens = ps.n_tokens;
    st.blocks[0] = s.kv.blocks[0];
    st.blocks[1] = s.kv.blocks[1];
    st.splices = s.splices;
    st.state_slot = s.kv.state_slot;
    if (ps.n_draft > 0 && !draft_states_.empty())
      st.state_snapshots = draft_states_of(st.state_slot);
    st.logits = ps.n_draft > 0    ? SeqStep::Logits::kAll
                : ps.wants_logits ? SeqStep::Logits::kLast
                                  : SeqStep::Logits::kNone;
    EngineRequest* r = requests_.at(s.id).get();
    // An embedding samples nothing: mean / first-position pooling read every row's hidden
    // state, last-position pooling the last row's (with the head when it wants scores).
    if (r->pooling == Pooling::kMean || r->pooling == Pooling::kCls)
      st.logits = SeqStep::Logits::kHidden;
    steps.push_back(st);
    reqs.push_back(r);
    r->in_flight = true;
    wants_logits.push_back(ps.wants_logits && r->pooling == Pooling::kNone);
  }
}

// One step. Returns false when nothing could be scheduled.
bool EngineImpl::run_step(std::unique_lock<std::mutex>& lk) {
  StepPlan plan = scheduler_.schedule();
  if (plan.empty()) return false;
  std::vector<int32_t> tokens;
  std::vector<SeqStep> steps;
  std::vector<EngineRequest*> reqs;
  std::vector<bool> wants_logits;
  stage_step(plan, tokens, steps, reqs, wants_logits);
  // The step reads only the planned sequences' block tables and tokens, which nothing
  // else changes while in_flight is set (cancel and close defer to us).
  lk.unlock();
  const auto t0 = std::chrono::steady_clock::now();
  Status fault = options_.step_fault ? options_.step_fault() : Status();
  Expected<std::span<const float>> logits = fault.ok() ? pass_.run(tokens, steps, kv_.storage())
                                                       : Expected<std::span<const float>>(fault);
  const double step_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<Sampled> sampled;
  if (logits.ok()) sampled = sample_step(reqs, plan, wants_logits, *logits);
  lk.lock();
  if (logits.ok()) learn_step_cost(plan, step_ms);
  // Verified drafts: the ones taken join the sequence before complete() keeps their K/V.
  if (logits.ok()) take_verified_drafts(plan, steps, reqs, sampled);
  // Only a step that wrote its KV may publish the blocks' prefix hashes: a failed one ends
  // its requests below, and their blocks go back to the pool unhashed.
  if (logits.ok()) scheduler_.complete(plan);
  // Hidden rows: the head's rows first (kLast: 1, kAll: n), then the kHidden ones.
  int64_t head_rows = 0, hidden_row = 0, logit_row = 0;
  for (const SeqStep& st : steps)
    head_rows += st.logits == SeqStep::Logits::kLast  ? 1
                 : st.logits == SeqStep::Logits::kAll ? st.n_tokens
                                                      : 0;
  hidden_row = head_rows;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EngineRequest& r = *reqs[i];
    const SeqStep& st = steps[i];
    const int64_t at = st.logits == SeqStep::Logits::kLast ? logit_row : hidden_row;
    if (logits.ok() && r.pooling != Pooling::kNone && !r.terminal_pushed && !r.cancel_requested)
      pool_rows(r, plan.seqs[i], at, logit_row, *logits);
    if (st.logits == SeqStep::Logits::kLast) ++logit_row;
    if (st.logits == SeqStep::Logits::kAll) logit_row += st.n_tokens;
    if (st.logits == SeqStep::Logits::kHidden) hidden_row += st.n_tokens;
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    EngineRequest& r = *reqs[i];
    r.in_flight = false;
    if (r.terminal_pushed) {
      // finished elsewhere
    } else if (r.cancel_requested) {
      finish(r, ChunkKind::kCancelled, "cancelled");
    } else if (!logits.ok()) {
      finish(r, ChunkKind::kError, "error", logits.status());
    } else if (r.pooling != Pooling::kNone) {
      if (plan.seqs[i].wants_logits) finish_embedding(r);  // the prompt is done
    } else if (sampled[i].token >= 0) {
      emit_step(r, sampled[i]);
    }
  }
  // The next step's drafts, each sequence's length weighed against the others decoding.
  int32_t decoding = 0;
  for (EngineRequest* r : reqs)
    decoding += r->drafter && !r->terminal_pushed && r->seq.pending() == 1;
  for (EngineRequest* r : reqs) {
    prepare_draft(*r, std::max(0, decoding - 1));
    if (r->session == 0) requests_.erase(r->id);  // its session was closed during the step
  }
  stream_cv_.notify_all();
  return true;
}

}  // namespace edge
