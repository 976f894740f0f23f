// The engine's implementation (include/edge/engine.h): shared state guarded by one mutex,
// a background loop that schedules and runs steps (engine_loop.cpp), and the public calls
// (engine.cpp) that add requests, read streams and cancel.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "edge/engine.h"
#include "model/forward.h"
#include "model/model.h"
#include "runtime/kv_cache.h"
#include "runtime/sampler.h"
#include "runtime/scheduler.h"
#include "runtime/speculative.h"
#include "runtime/text_stream.h"

namespace edge {

struct EngineRequest {
  SessionId session = 0;
  uint64_t id = 0;
  RequestParams params;
  std::vector<MediaEmbedding> media;  // keeps the rows seq.splices points into
  SchedSeq seq;
  Sampler sampler;
  std::optional<Tokenizer::StreamDecoder> decoder;
  StopStringFilter stop_filter;
  std::deque<StreamChunk> queue;  // chunks not yet read
  int64_t n_generated = 0;
  bool in_flight = false;  // part of the step running now (its KV is in use)
  bool cancel_requested = false;
  bool terminal_pushed = false;  // kDone / kCancelled / kError queued: nothing follows
  // An embedding request (GenerateRequest::pooling): the pooled rows so far.
  Pooling pooling = Pooling::kNone;
  std::vector<int32_t> score_ids;
  std::vector<double> pooled;  // kMean: the sum; kCls / kLast: the row
  std::vector<float> scores;
  // Speculative decoding (EngineOptions::speculative): null where the request decodes plainly.
  std::unique_ptr<Drafter> drafter;
  DraftController draft_control{0};
  int64_t spec_drafted = 0, spec_accepted = 0;

  EngineRequest(const RequestParams& p, std::vector<std::string> stops)
      : params(p), sampler(p.sampling), stop_filter(std::move(stops)) {}
};

// The threads an engine's steps run on: the model's pool (claimed, released at the end)
// or, when another engine holds that, a pool of its own.
struct EnginePool {
  EnginePool() = default;
  EnginePool(EnginePool&& o) noexcept : claimed(o.claimed), owned(std::move(o.owned)) {
    o.claimed = nullptr;
  }
  ~EnginePool() {
    if (claimed) claimed->release_pool();
  }
  const Model* claimed = nullptr;
  std::unique_ptr<ThreadPool> owned;
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(const Model& model, std::unique_ptr<Model> owned, const EngineOptions& options,
             KvCache kv, EnginePool pool, std::unique_ptr<Model> draft, ForwardPass pass);
  ~EngineImpl() override;

  Expected<SessionId> open_session() override;
  Status close_session(SessionId session) override;
  Expected<RequestHandle> submit(SessionId session, GenerateRequest request) override;
  Expected<StreamChunk> next(const RequestHandle& h, std::chrono::milliseconds timeout) override;
  Status cancel(const RequestHandle& h) override;
  EngineStats stats() const override;
  bool wait_for_stats(const std::function<bool(const EngineStats&)>& done,
                      std::chrono::milliseconds timeout) override;
  const ModelConfig& config() const override { return model_->config(); }
  const Tokenizer* tokenizer() const override { return model_->tokenizer(); }
  const EngineOptions& options() const override { return options_; }

 private:
  // engine_loop.cpp
  void loop();
  bool run_step(std::unique_lock<std::mutex>& lk);
  // Learns the step costs (decode-only steps; the extra time per prompt token) and sets
  // the scheduler's prompt cap from the ITL target. mu_ held.
  void learn_step_cost(const StepPlan& plan, double ms);
  // The token (and logprobs) sampled for one request of a step, computed without the lock.
  struct Sampled {
    int32_t token = -1;  // -1: the request wanted no logits this step
    std::optional<TokenLogprob> logprob;
    std::vector<int32_t> drafts_taken;  // drafts verified this step, before `token`
  };
  // plan: the step's slices (logit rows: 1 + n_draft for a slice that wants logits).
  std::vector<Sampled> sample_step(const std::vector<EngineRequest*>& reqs, const StepPlan& plan,
                                   const std::vector<bool>& wants_logits,
                                   std::span<const float> logits) const;
  // Verifies r's drafts on its rows [1 + n_draft, n_vocab] (the rejection rule).
  void verify_drafts(EngineRequest& r, int64_t n_draft, std::span<const float> rows,
                     Sampled& out) const;
  // Queues one token (in_history: already appended to the sequence, an accepted draft).
  void emit_token(EngineRequest& r, const Sampled& s, int32_t token, bool in_history);
  // Emits what a step gave r: the drafts taken, then its sampled token. mu_ held.
  void emit_step(EngineRequest& r, const Sampled& s);
  // The drafts r's next step verifies (none where drafting does not pay). mu_ held.
  void prepare_draft(EngineRequest& r, int32_t other_decoding);
  // Adds an embedding request's rows of the step just run (hidden rows from `row`, logits
  // row `logit_row` when it asked for its scores); mu_ held.
  void pool_rows(EngineRequest& r, const PlannedSeq& ps, int64_t row, int64_t logit_row,
                 std::span<const float> logits);
  void finish_embedding(EngineRequest& r);
  void finish(EngineRequest& r, ChunkKind kind, const std::string& reason, Status error = {});
  void push_chunk(EngineRequest& r, StreamChunk c);

  // engine.cpp
  Expected<EngineRequest*> find(const RequestHandle& h);
  Status validate(const GenerateRequest& req) const;
  EngineStats stats_locked() const;  // mu_ held

  const Model* model_;
  std::unique_ptr<Model> owned_model_;
  EngineOptions options_;
  uint64_t engine_id_;
  EnginePool pool_;  // before pass_, which runs on it; released after the loop thread joins
  // speculative "draft": the draft model (on pool_'s threads); requests' drafters use it.
  std::unique_ptr<Model> draft_model_;
  KvCache kv_;
  ForwardPass pass_;
  Scheduler scheduler_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;    // the loop waits for work
  std::condition_variable stream_cv_;  // readers wait for chunks
  bool stop_ = false;
  uint64_t next_session_ = 1, next_request_ = 1;
  std::set<SessionId> sessions_;
  std::map<uint64_t, std::unique_ptr<EngineRequest>> requests_;
  EngineStats stats_;
  double decode_step_ms_ = 0, prefill_token_ms_ = 0;  // moving averages (0: not seen yet)
  StepCostTable spec_costs_;  // decode-only steps by their positions: what drafts cost
  // Models with recurrent layers: per state slot, the states a verify step keeps after each
  // of its tokens, [max_seqs][n_state_layers, 1 + draft_max, state floats] (SeqStep).
  std::vector<float, TaggedAllocator<float, MemCategory::kState>> draft_states_;
  float* draft_states_of(int32_t slot);
  // After a verify step whose first `kept` tokens stand: the sequence's recurrent state goes
  // back to the copy after token kept - 1. mu_ held.
  void restore_draft_state(const SeqStep& st, int64_t kept);
  void stage_step(const StepPlan& plan, std::vector<int32_t>& tokens, std::vector<SeqStep>& steps,
                  std::vector<EngineRequest*>& reqs, std::vector<bool>& wants_logits);
  void take_verified_drafts(const StepPlan& plan, const std::vector<SeqStep>& steps,
                            const std::vector<EngineRequest*>& reqs,
                            const std::vector<Sampled>& sampled);
  std::thread thread_;
};

}  // namespace edge
