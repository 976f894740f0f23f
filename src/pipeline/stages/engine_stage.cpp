#include "pipeline/stages/engine_stage.h"

#include <fmt/format.h>

#include <optional>

#include "core/process_rss.h"
#include "kernels/api.h"
#include "runtime/memory_plan.h"

namespace edge::pipeline {

Expected<PlannedBytes> engine_stage_reservation(const StageSpec& s, const Artifact& model,
                                                const std::string& model_path,
                                                const PipelinePlanOptions& o) {
  ASSIGN_OR_RETURN(ModelFootprint fp, read_model_footprint(model_path));
  PlanOptions po;
  po.ctx = s.engine.ctx > 0 ? s.engine.ctx : o.ctx;
  po.max_seqs = o.max_seqs > 0 ? o.max_seqs : s.capacity;
  po.max_batched_tokens = s.engine.max_batched_tokens;
  po.kv_budget_bytes = s.engine.kv_budget_bytes;
  auto types = parse_kv_types(s.engine.kv_type, s.engine.kv_type_v);
  if (!types)
    return Status::invalid_argument(
        fmt::format("stage '{}': {}", s.name, types.status().message()));
  po.kv_types = *types;
  po.state_checkpoints = s.engine.prefix_cache ? s.engine.state_checkpoints : 0;
  po.draft_states = s.engine.speculative.empty() ? 0 : po.max_seqs * (1 + s.engine.draft_max);
  std::optional<ModelFootprint> draft;
  if (!s.engine.draft_model.empty()) {
    auto d = read_model_footprint(s.engine.draft_model);
    if (!d)
      return d.status().with_context(
          fmt::format("stage '{}': draft model {}", s.name, s.engine.draft_model));
    draft = std::move(*d);
    po.draft = &*draft;
  }
  MemoryLimit unlimited;  // the stage's own bytes; the pipeline ledger decides admission
  ASSIGN_OR_RETURN(MemoryPlan mp, make_memory_plan(fp, po, unlimited));
  return PlannedBytes{mp.total(), fmt::format("memory plan of {} at ctx {} x {} seqs", model.path,
                                              po.ctx, po.max_seqs)};
}

Status EngineStage::load(const std::string& model_path, const StageSpec& s,
                         const PipelineRunOptions& o) {
  LoadOptions lo;
  lo.n_threads = o.n_threads;
  ASSIGN_OR_RETURN(model_, Model::load(model_path, lo));
  EngineOptions eo;
  eo.max_model_len = s.engine.ctx > 0 ? s.engine.ctx : o.ctx;
  eo.max_seqs = s.capacity;
  eo.n_threads = o.n_threads;
  eo.max_batched_tokens = s.engine.max_batched_tokens;
  eo.kv_type = s.engine.kv_type;
  eo.kv_type_v = s.engine.kv_type_v;
  eo.kv_budget_bytes = static_cast<uint64_t>(s.engine.kv_budget_bytes);
  eo.itl_target_ms = s.engine.itl_target_ms;
  eo.prefix_cache = s.engine.prefix_cache;
  eo.state_checkpoints = s.engine.state_checkpoints;
  eo.speculative = s.engine.speculative;
  eo.draft_max = s.engine.draft_max;
  eo.draft_model = s.engine.draft_model;
  ASSIGN_OR_RETURN(engine_, Engine::create(*model_, eo));
  return Status();
}

Status EngineStage::submit_and_drain(uint64_t epoch, GenerateRequest req,
                                     const std::function<void(const StreamChunk&)>& on_chunk) {
  ASSIGN_OR_RETURN(SessionId session, engine_->open_session());
  auto h = engine_->submit(session, std::move(req));
  Status st = h.status();
  if (h.ok()) {
    track(epoch, *h);
    st = drain(*h, on_chunk);
    untrack(epoch);
  }
  (void)engine_->close_session(session);
  return st;
}

Status EngineStage::drain(const RequestHandle& h,
                          const std::function<void(const StreamChunk&)>& on_chunk) {
  for (;;) {
    auto c = engine_->next(h, std::chrono::minutes(10));
    if (!c) return c.status().with_context("stage '" + name_ + "'");
    on_chunk(*c);
    // A cancelled stream ends in a cancelled status (its chunk may carry none), so that a
    // worker answers `failed` with code cancelled rather than `done`.
    if (c->kind == ChunkKind::kCancelled && c->error.ok())
      return Status::cancelled("stage '" + name_ + "': the request was cancelled");
    if (c->kind != ChunkKind::kTokens) return c->kind == ChunkKind::kDone ? Status() : c->error;
  }
}

void EngineStage::cancel(uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = running_.find(epoch);
  if (it != running_.end())
    (void)engine_->cancel(it->second);  // its stream ends with a kCancelled chunk
  else
    cancelled_early_.insert(epoch);  // run() has not submitted it yet
}

int64_t EngineStage::resident_bytes() const {
  const ModelMemory& m = model_->memory();
  int64_t bytes = m.weights_anon + m.tokenizer + static_cast<int64_t>(engine_->stats().kv_bytes);
  for (const auto& [data, len] : m.mapped_ranges) {
    auto r = mincore_residency(data, len);
    bytes += r.ok() ? r->resident : static_cast<int64_t>(len);
  }
  return bytes;
}

// A request cancelled before it was submitted is cancelled now.
void EngineStage::track(uint64_t epoch, const RequestHandle& h) {
  std::lock_guard<std::mutex> l(mu_);
  running_[epoch] = h;
  if (cancelled_early_.erase(epoch)) (void)engine_->cancel(h);
}

void EngineStage::untrack(uint64_t epoch) {
  std::lock_guard<std::mutex> l(mu_);
  running_.erase(epoch);
}

}  // namespace edge::pipeline
