#include "pipeline/graph/plan.h"

#include <fmt/format.h>
#include <unistd.h>

#include "core/process_rss.h"
#include "pipeline/graph/artifact.h"
#include "pipeline/graph/stage_kind.h"

namespace edge::pipeline {

namespace {

std::string backend_of(const StageSpec& s) {
  switch (s.placement) {
    case Placement::kInProcess:
      return "edge-infer in process";
    case Placement::kWorker:
      return "edge-infer worker";
    case Placement::kExternal:
      return s.backend;
  }
  return "?";
}

// A worker is another process of this binary: its code and libraries are resident there
// too (RssFile, ours is the estimate), and so are its own heap, thread stacks and the shared
// tensor buffers it maps (a fixed allowance), none of which the model's plan counts.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// A sanitizer build's process carries shadow memory and a free-queue quarantine that no
// plan counts: its workers get room for them, or the ledger would stop every worker stage.
constexpr int64_t kWorkerProcessAllowance = int64_t{512} << 20;
#else
constexpr int64_t kWorkerProcessAllowance = int64_t{16} << 20;
#endif
void add_worker_code(const StageSpec& s, StagePlan* out) {
  if (s.placement != Placement::kWorker) return;
  const auto self = read_rss(getpid());
  const int64_t code = self.ok() ? self->file : 0;
  out->reserved_bytes += code + kWorkerProcessAllowance;
  out->reservation_source += fmt::format(
      " + {} of worker process code + {} of its heap, stacks "
      "and shared buffers",
      format_bytes(code), format_bytes(kWorkerProcessAllowance));
}

// Bytes a stage reserves: declared, or what its kind plans for its model artifact.
Status reservation_of(const PipelineSpec& p, const StageSpec& s, const PipelinePlanOptions& o,
                      StagePlan* out) {
  if (s.reservation_bytes >= 0) {
    out->reserved_bytes = s.reservation_bytes;
    out->reservation_source = "declared";
    return Status();
  }
  const Artifact* model = nullptr;
  for (const Artifact& a : s.artifacts)
    if (a.role == "model") model = &a;
  const PlanReservationFn plan = s.kind->plan_reservation;
  if (!model || !plan || s.placement == Placement::kExternal)
    return Status::invalid_argument(
        fmt::format("stage '{}': reservation 'plan' needs one of our language-model stages with a "
                    "model artifact; "
                    "declare the bytes (e.g. reservation: 512MiB)",
                    s.name));
  ASSIGN_OR_RETURN(PlannedBytes planned, plan(s, *model, artifact_path(p, *model), o));
  out->reserved_bytes = planned.bytes;
  out->reservation_source = std::move(planned.source);
  add_worker_code(s, out);
  return Status();
}

}  // namespace

Status check_device(const StageSpec& s) {
  if (s.device == DeviceClass::kCpu || s.placement == Placement::kExternal ||
      s.placement_policy == PlacementPolicy::kPrefer)
    return Status();
  return Status::unsupported(fmt::format(
      "stage '{}': requested placement {} ({}), but this build runs {} stages on the cpu only; "
      "set placement_policy: prefer to run it on the cpu, or serve it from an external server "
      "that drives the {}",
      s.name, device_class_name(s.device), placement_name(s.placement), placement_name(s.placement),
      device_class_name(s.device)));
}

Expected<StagePlan> plan_stage(const PipelineSpec& p, const StageSpec& s,
                               const PipelinePlanOptions& o) {
  RETURN_IF_ERROR(check_device(s));
  RETURN_IF_ERROR(verify_artifacts(p, s));
  StagePlan sp;
  sp.stage = &s;
  sp.backend = backend_of(s);
  for (const Artifact& a : s.artifacts) sp.artifacts.push_back({artifact_path(p, a), a.sha256, a.symbol});
  RETURN_IF_ERROR(reservation_of(p, s, o, &sp));
  return sp;
}

Expected<PipelinePlan> plan_pipeline(const PipelineSpec& p, const MemoryLimit& limit,
                                     const PipelinePlanOptions& o) {
  PipelinePlan plan;
  plan.name = p.name;
  plan.limit_bytes = limit.bytes > 0 ? limit.bytes : INT64_MAX;
  plan.limit_source = limit.source.empty() ? "no limit" : limit.source;
  RamLedger ledger(plan.limit_bytes, plan.limit_source);
  plan.admitted = true;
  for (const StageSpec* s : p.topological_order()) {
    ASSIGN_OR_RETURN(StagePlan sp, plan_stage(p, *s, o));
    sp.available_before = ledger.available();
    if (plan.admitted) {
      auto id = ledger.reserve(s->name, s->device, sp.reserved_bytes);
      if (!id) {
        plan.admitted = false;
        plan.refusal = id.status().message();
      }
    }
    plan.stages.push_back(std::move(sp));
  }
  return plan;
}

nlohmann::json PipelinePlan::to_json() const {
  nlohmann::json stages_json = nlohmann::json::array();
  for (const StagePlan& sp : stages) {
    const StageSpec& s = *sp.stage;
    nlohmann::json arts = nlohmann::json::array();
    for (const StagePlan::VerifiedArtifact& v : sp.artifacts) {
      nlohmann::json j = {{"path", v.path}, {"sha256", v.sha256}, {"verified", true}};
      if (!v.symbol.empty()) j["symbol"] = v.symbol;  // pinned to the hash at load
      arts.push_back(std::move(j));
    }
    stages_json.push_back({{"stage", s.name},
                           {"kind", s.kind->name},
                           {"contract", s.contract.str()},
                           {"backend", sp.backend},
                           {"requested_device", device_class_name(s.device)},
                           {"placement_policy", placement_policy_name(s.placement_policy)},
                           {"placement", placement_name(s.placement)},
                           {"capacity", s.capacity},
                           {"reserved_bytes", sp.reserved_bytes},
                           {"reservation_source", sp.reservation_source},
                           {"available_before_bytes", sp.available_before},
                           {"artifacts", arts}});
  }
  return {{"pipeline", name},     {"limit_bytes", limit_bytes}, {"limit_source", limit_source},
          {"admitted", admitted}, {"refusal", refusal},         {"stages", stages_json}};
}

}  // namespace edge::pipeline
