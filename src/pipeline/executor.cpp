#include "pipeline/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/process_rss.h"
#include "edge/engine.h"
#include "model/model.h"
#include "pipeline/artifact.h"
#include "pipeline/plan.h"

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
    eo.max_model_len = o.ctx;
    eo.max_seqs = s.capacity;
    eo.n_threads = o.n_threads;
    ASSIGN_OR_RETURN(r->engine_, Engine::create(*r->model_, eo));
    return std::unique_ptr<StageRunner>(std::move(r));
  }

  Status run(uint64_t epoch, const std::map<std::string, PortValue>& inputs,
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
    req.params.max_tokens = max_tokens_;
    ASSIGN_OR_RETURN(SessionId session, engine_->open_session());
    auto h = engine_->submit(session, std::move(req));
    Status st = h.ok() ? drain(*h, epoch, emit) : h.status();
    (void)engine_->close_session(session);
    return st;
  }

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
        emit(std::move(e));
      }
      ++seq;
      if (terminal) return c->kind == ChunkKind::kDone ? Status() : c->error;
    }
  }

  std::string name_;
  int32_t max_tokens_;
  std::unique_ptr<Model> model_;  // declared before engine_: destroyed after it
  std::unique_ptr<Engine> engine_;
};

const Artifact* model_artifact(const StageSpec& s) {
  for (const Artifact& a : s.artifacts)
    if (a.role == "model") return &a;
  return nullptr;
}

}  // namespace

Status PipelineRuntime::start_stage(const StageSpec& s, const PipelineRunOptions& o) {
  if (s.kind != StageKind::kLm || s.placement != Placement::kInProcess)
    return Status::unsupported(
        fmt::format("stage '{}': {} stages placed {} cannot run yet (lm in_process can)", s.name,
                    stage_kind_name(s.kind), placement_name(s.placement)));
  PipelinePlanOptions po;
  po.ctx = o.ctx;
  ASSIGN_OR_RETURN(StagePlan plan, plan_stage(spec_, s, po));
  ASSIGN_OR_RETURN(uint64_t id, ledger_.reserve(s.name, s.device, plan.reserved_bytes));
  Started st;
  st.spec = &s;
  st.reservation = id;
  stages_.push_back(std::move(st));  // released by the destructor from here on
  const Artifact* model = model_artifact(s);
  if (!model) return Status::invalid_argument(fmt::format("stage '{}': no model artifact", s.name));
  ASSIGN_OR_RETURN(stages_.back().runner, LmStageRunner::start(artifact_path(spec_, *model), s, o));
  return check_rss(stages_.back());
}

Status PipelineRuntime::check_rss(Started& st) {
  st.rss_bytes = st.runner->resident_bytes();
  return ledger_.check_rss(st.reservation, st.rss_bytes);
}

Expected<std::unique_ptr<PipelineRuntime>> PipelineRuntime::start(const PipelineSpec& spec,
                                                                  RamLedger& ledger,
                                                                  const PipelineRunOptions& o) {
  std::unique_ptr<PipelineRuntime> rt(new PipelineRuntime(spec, ledger));
  // The copy of the spec inside rt is what the stages point into.
  for (const StageSpec* s : rt->spec_.topological_order()) RETURN_IF_ERROR(rt->start_stage(*s, o));
  return rt;
}

PipelineRuntime::~PipelineRuntime() {
  for (auto it = stages_.rbegin(); it != stages_.rend(); ++it) {
    it->runner.reset();
    (void)ledger_.release(it->reservation);
  }
}

Status PipelineRuntime::run(const std::map<std::string, PortValue>& inputs,
                            const std::function<void(const StageEvent&)>& on_output) {
  const uint64_t epoch = epochs_.next();
  std::map<std::string, PortValue> produced;  // "stage.port" -> gathered value
  for (Started& st : stages_) {
    std::map<std::string, PortValue> in;
    for (const Route& r : spec_.routes) {
      if (r.to.stage != st.spec->name) continue;
      if (r.from.stage == "input") {
        auto v = inputs.find(r.from.port);
        if (v == inputs.end())
          return Status::invalid_argument(
              fmt::format("no value for graph input '{}' (route {})", r.from.port, r.str()));
        in[r.to.port] = v->second;
      } else {
        in[r.to.port] = produced[r.from.str()];
      }
    }
    auto emit = [&](StageEvent e) {
      PortValue& acc = produced[e.stage + "." + e.port];
      acc.text += e.value.text;
      acc.tokens.insert(acc.tokens.end(), e.value.tokens.begin(), e.value.tokens.end());
      for (const Route& r : spec_.routes) {
        if (r.to.stage != "output" || r.from.stage != e.stage || r.from.port != e.port) continue;
        StageEvent out = e;
        out.port = r.to.port;
        on_output(out);
      }
    };
    RETURN_IF_ERROR(st.runner->run(epoch, in, emit));
    RETURN_IF_ERROR(check_rss(st));  // held to its reservation while it runs, not only at start
  }
  return Status();
}

nlohmann::json PipelineRuntime::state_json() const {
  nlohmann::json stages = nlohmann::json::array();
  for (const Started& st : stages_)
    stages.push_back({{"stage", st.spec->name},
                      {"placement_actual", "in_process cpu"},
                      {"worker_generation", 0},
                      {"loaded_rss_bytes", st.rss_bytes}});
  return {{"pipeline", spec_.name},
          {"epochs_issued", epochs_.issued()},
          {"ledger", ledger_.to_json()},
          {"stages", stages}};
}

}  // namespace edge::pipeline
