#include "pipeline/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/process_rss.h"
#include "pipeline/artifact.h"
#include "pipeline/lm_stage.h"
#include "pipeline/plan.h"
#include "pipeline/worker.h"

namespace edge::pipeline {

namespace {

const Artifact* model_artifact(const StageSpec& s) {
  for (const Artifact& a : s.artifacts)
    if (a.role == "model") return &a;
  return nullptr;
}

}  // namespace

Status PipelineRuntime::start_stage(const StageSpec& s, const PipelineRunOptions& o) {
  if (s.kind != StageKind::kLm || s.placement == Placement::kExternal)
    return Status::unsupported(fmt::format(
        "stage '{}': {} stages placed {} cannot run yet (lm stages in process or in a worker can)",
        s.name, stage_kind_name(s.kind), placement_name(s.placement)));
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
  const std::string path = artifact_path(spec_, *model);
  if (s.placement == Placement::kWorker) {
    ASSIGN_OR_RETURN(stages_.back().runner,
                     start_worker_stage(path, s, WorkerOptions{o.worker_binary, o}));
  } else {
    ASSIGN_OR_RETURN(stages_.back().runner, start_lm_stage(path, s, o));
  }
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
                      {"placement_actual", st.runner ? st.runner->placement() : "not started"},
                      {"worker_generation", st.runner ? st.runner->generation() : 0},
                      {"loaded_rss_bytes", st.rss_bytes}});
  return {{"pipeline", spec_.name},
          {"epochs_issued", epochs_.issued()},
          {"ledger", ledger_.to_json()},
          {"stages", stages}};
}

}  // namespace edge::pipeline
