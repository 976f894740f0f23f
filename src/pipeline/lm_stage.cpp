#include "pipeline/lm_stage.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include "core/process_rss.h"
#include "edge/engine.h"
#include "model/model.h"

namespace edge::pipeline {

namespace {

// text.generate@1 on our engine, in this process: prompt tokens (or text, tokenised with
// the model's tokenizer) in; generated tokens and text out, one event per engine chunk.
class LmStageRunner final : public StageRunner {
 public:
  static Expected<std::unique_ptr<StageRunner>> start(const std::string& model_path,
                                                      const StageSpec& s,
                                                      const PipelineRunOptions& o) {
    auto r = std::unique_ptr<LmStageRunner>(new LmStageRunner(s.name, o.max_tokens));
    LoadOptions lo;
    lo.n_threads = o.n_threads;
    ASSIGN_OR_RETURN(r->model_, Model::load(model_path, lo));
    EngineOptions eo;
    eo.max_model_len = s.engine.ctx > 0 ? s.engine.ctx : o.ctx;
    eo.max_seqs = s.capacity;
    eo.n_threads = o.n_threads;
    eo.max_batched_tokens = s.engine.max_batched_tokens;
    eo.kv_type = s.engine.kv_type;
    eo.kv_budget_bytes = static_cast<uint64_t>(s.engine.kv_budget_bytes);
    eo.itl_target_ms = s.engine.itl_target_ms;
    ASSIGN_OR_RETURN(r->engine_, Engine::create(*r->model_, eo));
    return std::unique_ptr<StageRunner>(std::move(r));
  }

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
             const std::function<void(StageEvent)>& emit) override {
    return run_with_params(epoch, inputs, nullptr, emit);
  }

  Status run_with_params(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
                         const RequestParams* params,
                         const std::function<void(StageEvent)>& emit) override {
    if (inputs.count("media"))
      return Status::unsupported(
          fmt::format("stage '{}': media input needs an encoder stage (not built yet)", name_));
    auto it = inputs.find("prompt");
    if (it == inputs.end())
      return Status::invalid_argument(fmt::format("stage '{}': no prompt", name_));
    GenerateRequest req;
    req.prompt = it->second.tokens;
    if (req.prompt.empty()) {
      const Tokenizer* tok = engine_->tokenizer();
      if (!tok)
        return Status::invalid_argument(
            fmt::format("stage '{}': text prompt but the model has no tokenizer", name_));
      req.prompt = tok->encode(it->second.text);
    }
    if (params)
      req.params = *params;
    else
      req.params.max_tokens = max_tokens_;  // greedy by default
    ASSIGN_OR_RETURN(SessionId session, engine_->open_session());
    auto h = engine_->submit(session, std::move(req));
    Status st = h.ok() ? track(epoch, *h) : h.status();
    if (st.ok()) st = drain(*h, epoch, emit);
    if (h.ok()) untrack(epoch);
    (void)engine_->close_session(session);
    return st;
  }

  void cancel(uint64_t epoch) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = running_.find(epoch);
    if (it != running_.end())
      (void)engine_->cancel(it->second);  // its stream ends with a kCancelled chunk
    else
      cancelled_early_.insert(epoch);  // run() has not submitted it yet
  }

  Engine* engine() override { return engine_.get(); }

  int64_t resident_bytes() const override {
    const ModelMemory& m = model_->memory();
    int64_t bytes = m.weights_anon + m.tokenizer + static_cast<int64_t>(engine_->stats().kv_bytes);
    for (const auto& [data, len] : m.mapped_ranges) {
      auto r = mincore_residency(data, len);
      bytes += r.ok() ? r->resident : static_cast<int64_t>(len);
    }
    return bytes;
  }

 private:
  LmStageRunner(std::string name, int32_t max_tokens)
      : name_(std::move(name)), max_tokens_(max_tokens) {}

  Status drain(const RequestHandle& h, uint64_t epoch,
               const std::function<void(StageEvent)>& emit) {
    uint64_t seq = 0;
    for (;;) {
      auto c = engine_->next(h, std::chrono::minutes(10));
      if (!c) return c.status().with_context("stage '" + name_ + "'");
      const bool terminal = c->kind != ChunkKind::kTokens;
      for (const char* port : {"tokens", "text"}) {
        StageEvent e;
        e.epoch = epoch, e.seq = seq, e.terminal = terminal, e.stage = name_, e.port = port;
        if (std::string(port) == "tokens")
          e.value.tokens = c->tokens;
        else
          e.value.text = c->text;
        if (c->kind == ChunkKind::kError || c->kind == ChunkKind::kCancelled) e.error = c->error;
        e.finish_reason = c->finish_reason;
        emit(std::move(e));
      }
      ++seq;
      if (terminal) return c->kind == ChunkKind::kDone ? Status() : c->error;
    }
  }

  // Registers a submitted request for cancel(); one cancelled before it was submitted is
  // cancelled now.
  Status track(uint64_t epoch, const RequestHandle& h) {
    std::lock_guard<std::mutex> l(mu_);
    running_[epoch] = h;
    if (cancelled_early_.erase(epoch)) (void)engine_->cancel(h);
    return Status();
  }
  void untrack(uint64_t epoch) {
    std::lock_guard<std::mutex> l(mu_);
    running_.erase(epoch);
  }

  std::string name_;
  int32_t max_tokens_;
  std::mutex mu_;
  std::map<uint64_t, RequestHandle> running_;
  std::set<uint64_t> cancelled_early_;
  std::unique_ptr<Model> model_;  // declared before engine_: destroyed after it
  std::unique_ptr<Engine> engine_;
};

}  // namespace

Expected<std::unique_ptr<StageRunner>> start_lm_stage(const std::string& model_path,
                                                      const StageSpec& s,
                                                      const PipelineRunOptions& o) {
  return LmStageRunner::start(model_path, s, o);
}

}  // namespace edge::pipeline
