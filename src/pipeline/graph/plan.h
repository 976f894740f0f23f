// The execution plan of a pipeline, before anything starts: per stage its backend,
// requested device, verified artifact hashes, capacity and the host RAM it reserves (our
// memory plan of its model, or the bytes the file declares), admitted in order on one
// shared RamLedger. A plan that does not fit is refused naming the stage.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/graph/graph.h"
#include "pipeline/graph/ledger.h"
#include "runtime/memory_plan.h"

namespace edge::pipeline {

struct StagePlan {
  const StageSpec* stage = nullptr;
  std::string backend;  // "edge-infer in process", "edge-infer worker", the external backend
  int64_t reserved_bytes = 0;
  std::string reservation_source;  // "memory plan of MODEL at ctx N" or "declared"
  int64_t available_before = 0;    // ledger room when this stage was admitted
  struct VerifiedArtifact {
    std::string path, sha256;
    std::string symbol;  // "demo:lm" when resolved from one (Artifact::symbol)
  };
  std::vector<VerifiedArtifact> artifacts;
};

struct PipelinePlan {
  std::string name;
  int64_t limit_bytes = 0;
  std::string limit_source;
  std::vector<StagePlan> stages;  // in topological order
  bool admitted = false;
  std::string refusal;  // why not, naming the stage (empty when admitted)
  nlohmann::json to_json() const;
};

struct PipelinePlanOptions {
  int64_t ctx = 4096;    // context of each lm stage's memory plan
  int64_t max_seqs = 0;  // 0: the stage's capacity
};

// Whether this build can place `s` on its requested device: in-process and worker stages run
// on the cpu only, so one that requires an igpu or npu is refused, naming both.
Status check_device(const StageSpec& s);
// One stage's plan (artifacts verified, reservation computed), without admission.
Expected<StagePlan> plan_stage(const PipelineSpec& p, const StageSpec& s,
                               const PipelinePlanOptions& o);

// Errors: an artifact that is missing or differs from its pinned hash, a "plan"
// reservation on a stage without a model. Refusal (admitted = false) when the stages'
// reservations do not fit the limit together.
Expected<PipelinePlan> plan_pipeline(const PipelineSpec& p, const MemoryLimit& limit,
                                     const PipelinePlanOptions& o = {});

}  // namespace edge::pipeline
